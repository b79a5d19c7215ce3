#include "structured/grammar.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace deepinfer::structured {

// Lowers the expression tree to the flat form (see grammar.h).
class GrammarLowering {
 public:
  using Element = Grammar::Element;
  using Kind = Grammar::ElementKind;
  static constexpr int64_t kMaxRepeat = 100000;
  // Most elements bounded repetitions may expand to in one grammar (a hostile grammar or schema
  // of many large counts is refused instead of exhausting memory).
  static constexpr int64_t kMaxExpanded = 4000000;

  explicit GrammarLowering(Grammar* g) : g_(g) {}

  Status Run(const std::vector<RuleDef>& defs, const std::string& root) {
    for (const RuleDef& d : defs) {
      if (index_.count(d.name)) {
        return InvalidArgument(Where(d.line, d.column) + "rule '" + d.name + "' defined twice");
      }
      index_[d.name] = NewRule(d.name);
    }
    auto it = index_.find(root);
    if (it == index_.end()) return InvalidArgument("grammar has no rule '" + root + "'");
    g_->root_ = it->second;
    for (const RuleDef& d : defs) DI_RETURN_IF_ERROR(LowerBody(index_[d.name], d.body));
    // Flatten: each alternative's elements followed by its kEnd sentinel.
    for (size_t r = 0; r < alts_.size(); ++r) {
      for (const auto& seq : alts_[r]) {
        g_->rules_[r].alternatives.push_back(static_cast<int32_t>(g_->elements_.size()));
        g_->elements_.insert(g_->elements_.end(), seq.begin(), seq.end());
        g_->elements_.push_back({Kind::kEnd, static_cast<int32_t>(r)});
      }
    }
    return Status::Ok();
  }

 private:
  static std::string Where(int line, int column) {
    return line > 0 ? std::to_string(line) + ":" + std::to_string(column) + ": " : "";
  }

  int32_t NewRule(const std::string& name) {
    g_->rules_.push_back({name, {}});
    alts_.emplace_back();
    return static_cast<int32_t>(g_->rules_.size() - 1);
  }
  int32_t NewAuxRule(int32_t parent) {
    return NewRule(g_->rules_[parent].name + "_" + std::to_string(++aux_count_));
  }

  Status LowerBody(int32_t rule, const Expr& body) {
    if (body.kind == Expr::Kind::kChoice) {
      for (const Expr& alt : body.children) DI_RETURN_IF_ERROR(AddAlternative(rule, alt));
      return Status::Ok();
    }
    return AddAlternative(rule, body);
  }

  Status AddAlternative(int32_t rule, const Expr& e) {
    std::vector<Element> seq;
    DI_RETURN_IF_ERROR(Append(rule, e, &seq));
    alts_[rule].push_back(std::move(seq));
    return Status::Ok();
  }

  // The single element that stands for `e` (an auxiliary rule when it is compound).
  StatusOr<Element> AsElement(int32_t owner, const Expr& e) {
    std::vector<Element> seq;
    DI_RETURN_IF_ERROR(Append(owner, e, &seq));
    if (seq.size() == 1) return seq[0];
    int32_t aux = NewAuxRule(owner);
    alts_[aux].push_back(std::move(seq));
    return Element{Kind::kRule, aux};
  }

  Status Append(int32_t owner, const Expr& e, std::vector<Element>* seq) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        if (e.text.empty()) return Status::Ok();
        g_->literals_.push_back(e.text);
        seq->push_back({Kind::kLiteral, static_cast<int32_t>(g_->literals_.size() - 1)});
        return Status::Ok();
      case Expr::Kind::kClass:
        g_->classes_.push_back(e.char_class);
        seq->push_back({Kind::kClass, static_cast<int32_t>(g_->classes_.size() - 1)});
        return Status::Ok();
      case Expr::Kind::kRuleRef: {
        auto it = index_.find(e.text);
        if (it == index_.end()) {
          return InvalidArgument(Where(e.line, e.column) + "undefined rule '" + e.text + "'");
        }
        seq->push_back({Kind::kRule, it->second});
        return Status::Ok();
      }
      case Expr::Kind::kSequence:
        for (const Expr& c : e.children) DI_RETURN_IF_ERROR(Append(owner, c, seq));
        return Status::Ok();
      case Expr::Kind::kChoice: {
        if (e.children.size() == 1) return Append(owner, e.children[0], seq);
        int32_t aux = NewAuxRule(owner);
        for (const Expr& alt : e.children) DI_RETURN_IF_ERROR(AddAlternative(aux, alt));
        seq->push_back({Kind::kRule, aux});
        return Status::Ok();
      }
      case Expr::Kind::kRepeat:
        return AppendRepeat(owner, e, seq);
    }
    return Internal("unknown expression kind");
  }

  Status AppendRepeat(int32_t owner, const Expr& e, std::vector<Element>* seq) {
    if (e.min < 0 || (e.max != Expr::kUnbounded && e.max < e.min)) {
      return InvalidArgument(Where(e.line, e.column) + "bad repetition bounds {" +
                             std::to_string(e.min) + "," + std::to_string(e.max) + "}");
    }
    if (e.min > kMaxRepeat || (e.max != Expr::kUnbounded && e.max > kMaxRepeat)) {
      return InvalidArgument(Where(e.line, e.column) + "repetition count above " +
                             std::to_string(kMaxRepeat));
    }
    if (e.max == 0) return Status::Ok();
    expanded_ += e.max == Expr::kUnbounded ? e.min + 1 : e.max;
    if (expanded_ > kMaxExpanded) {
      return InvalidArgument(Where(e.line, e.column) +
                             "grammar too large: its repetitions expand " + "to more than " +
                             std::to_string(kMaxExpanded) + " elements");
    }
    DI_ASSIGN_OR_RETURN(Element body, AsElement(owner, e.children[0]));
    for (int i = 0; i < e.min; ++i) seq->push_back(body);
    if (e.max == Expr::kUnbounded) {
      int32_t star = NewAuxRule(owner);  // star ::= body star | ""
      alts_[star].push_back({body, {Kind::kRule, star}});
      alts_[star].push_back({});
      seq->push_back({Kind::kRule, star});
    } else if (e.max > e.min) {
      int32_t prev = -1;  // opt_k ::= body opt_{k-1} | ""
      std::vector<int32_t> chain;
      for (int k = 0; k < e.max - e.min; ++k) {
        int32_t opt = NewAuxRule(owner);
        std::vector<Element> alt = {body};
        if (prev >= 0) alt.push_back({Kind::kRule, prev});
        alts_[opt].push_back(std::move(alt));
        alts_[opt].push_back({});
        prev = opt;
        chain.push_back(opt);
      }
      g_->repeat_chains_.push_back(std::move(chain));
      seq->push_back({Kind::kRule, prev});
    }
    return Status::Ok();
  }

  Grammar* g_;
  int64_t expanded_ = 0;  // elements bounded repetitions expanded to so far
  std::unordered_map<std::string, int32_t> index_;
  std::vector<std::vector<std::vector<Element>>> alts_;  // per rule, per alternative
  int aux_count_ = 0;
};

StatusOr<std::shared_ptr<const Grammar>> Grammar::Build(const std::vector<RuleDef>& defs,
                                                        const std::string& root) {
  auto g = std::make_shared<Grammar>();
  GrammarLowering lowering(g.get());
  DI_RETURN_IF_ERROR(lowering.Run(defs, root));
  DI_RETURN_IF_ERROR(g->Analyze());
  return std::shared_ptr<const Grammar>(std::move(g));
}

Status Grammar::Analyze() {
  const size_t n_rules = rules_.size();
  rule_min_.assign(n_rules, kInfinite);
  auto element_min = [&](const Element& e) -> int64_t {
    switch (e.kind) {
      case ElementKind::kLiteral:
        return static_cast<int64_t>(literals_[e.index].size());
      case ElementKind::kClass:
        return classes_[e.index].empty() ? kInfinite : classes_[e.index].MinUtf8Bytes();
      case ElementKind::kRule:
        return rule_min_[e.index];
      case ElementKind::kEnd:
        return 0;
    }
    return kInfinite;
  };
  auto alt_min = [&](int32_t begin) {
    int64_t sum = 0;
    for (int32_t e = begin; elements_[e].kind != ElementKind::kEnd; ++e) {
      sum = std::min(kInfinite, sum + element_min(elements_[e]));
    }
    return sum;
  };
  // Shortest derivations: values only decrease, so iterate to the fixed point.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n_rules; ++r) {
      for (int32_t a : rules_[r].alternatives) {
        int64_t m = alt_min(a);
        if (m < rule_min_[r]) rule_min_[r] = m, changed = true;
      }
    }
  }
  if (rule_min_[root_] >= kInfinite) {
    return InvalidArgument("rule '" + rules_[root_].name +
                           "' cannot derive any finite string (unsatisfiable grammar)");
  }
  // Drop alternatives that can never complete.
  for (Rule& rule : rules_) {
    std::erase_if(rule.alternatives, [&](int32_t a) { return alt_min(a) >= kInfinite; });
  }
  suffix_min_.assign(elements_.size(), 0);
  for (int32_t e = static_cast<int32_t>(elements_.size()) - 1; e >= 0; --e) {
    if (elements_[e].kind == ElementKind::kEnd) continue;
    suffix_min_[e] = std::min(kInfinite, suffix_min_[e + 1] + element_min(elements_[e]));
  }
  // Left recursion: rule A reaches rule B when B can be the first thing A matches.
  std::vector<std::vector<int32_t>> first(n_rules);
  for (size_t r = 0; r < n_rules; ++r) {
    for (int32_t a : rules_[r].alternatives) {
      for (int32_t e = a; elements_[e].kind != ElementKind::kEnd; ++e) {
        if (elements_[e].kind == ElementKind::kRule) first[r].push_back(elements_[e].index);
        if (element_min(elements_[e]) > 0) break;
      }
    }
  }
  std::vector<int> color(n_rules, 0);  // 0 new, 1 on the DFS path, 2 done
  std::string cycle_rule;
  std::function<bool(int32_t)> dfs = [&](int32_t r) {
    color[r] = 1;
    for (int32_t s : first[r]) {
      if (color[s] == 1) {
        cycle_rule = rules_[s].name;
        return true;
      }
      if (color[s] == 0 && dfs(s)) return true;
    }
    color[r] = 2;
    return false;
  };
  for (size_t r = 0; r < n_rules; ++r) {
    if (color[r] == 0 && dfs(static_cast<int32_t>(r))) {
      return InvalidArgument("left recursion through rule '" + cycle_rule +
                             "' (not supported: write it right-recursively or with * / +; a "
                             "repetition of something that can be empty is also left-recursive)");
    }
  }
  return Status::Ok();
}

std::string Grammar::ToString() const {
  std::string out;
  for (size_t r = 0; r < rules_.size(); ++r) {
    out += rules_[r].name + " ::=";
    for (size_t i = 0; i < rules_[r].alternatives.size(); ++i) {
      if (i > 0) out += " |";
      int32_t e = rules_[r].alternatives[i];
      if (elements_[e].kind == ElementKind::kEnd) out += " \"\"";
      for (; elements_[e].kind != ElementKind::kEnd; ++e) {
        const Element& el = elements_[e];
        out += ' ';
        if (el.kind == ElementKind::kLiteral) {
          out += '"';
          for (char c : literals_[el.index]) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
          }
          out += '"';
        } else if (el.kind == ElementKind::kClass) {
          out += classes_[el.index].ToEbnf();
        } else {
          out += rules_[el.index].name;
        }
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace deepinfer::structured
