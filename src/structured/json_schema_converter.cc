#include "structured/json_schema_converter.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "structured/char_class.h"
#include "structured/ebnf_parser.h"
#include "structured/json_schema_formats.h"
#include "structured/json_schema_keywords.h"
#include "structured/json_schema_names.h"
#include "structured/json_schema_negation.h"
#include "structured/json_schema_unique.h"
#include "structured/number_ranges.h"
#include "structured/one_of_check.h"
#include "structured/regex_converter.h"
#include "structured/schema_resources.h"

namespace deepinfer::structured {
namespace {

// Shared rules every converted schema may use; `chars` is the class of characters written
// unescaped inside strings.
std::string BaseRules(const CharClass& chars) {
  const std::string c = chars.ToEbnf();
  return R"(
comma ::= "," " "?
colon ::= ":" " "?
json_value ::= json_object | json_array | json_string | json_number | "true" | "false" | "null"
json_object ::= "{" (json_string colon json_value (comma json_string colon json_value)*)? "}"
json_array ::= "[" (json_value (comma json_value)*)? "]"
json_string ::= "\"" json_chars
json_chars ::= "\"" | )" +
         c + R"( json_chars | "\\" json_escape json_chars
json_char ::= )" +
         c + R"( | "\\" json_escape
json_escape ::= ["\\/bfnrt] | "u" [0-9a-fA-F]{4}
json_number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
json_key_char ::= )" +
         c + R"(
json_key_rest ::= "\"" | json_key_char json_key_rest
)";
}

// Characters written unescaped in strings: all but `"`, `\`, controls and the excluded ones.
CharClass StringChars(const CharClass& excluded) {
  CharClass banned = excluded;
  banned.AddRange(0, 0x1F);
  banned.Add('"');
  banned.Add('\\');
  return banned.Complement();
}

class Converter {
 public:
  Converter(const Json& root, const JsonSchemaOptions& options, std::string prefix)
      : doc_(SchemaResources::Absolutized(root)),
        resources_(doc_),
        options_(options),
        prefix_(std::move(prefix)) {}

  // An expression for the schema at `pointer` (its $refs resolve against the whole document).
  StatusOr<std::string> Convert(const Json::json_pointer& pointer, const std::string& hint) {
    try {
      return Visit(doc_.at(pointer), hint, 0);
    } catch (const nlohmann::json::out_of_range&) {
      return InvalidArgument("schema pointer '" + pointer.to_string() + "' does not resolve");
    }
  }
  // The rules defined so far, one per line.
  std::string Rules() const {
    std::string out;
    for (const auto& [name, body] : rules_) {
      out += name;
      out += " ::= ";
      out += body;
      out += "\n";
    }
    return out;
  }

 private:
  static constexpr int kMaxDepth = 64;
  static constexpr size_t kMaxDependentSchemas = 4;
  // The largest minProperties / maxProperties of an object with any keys (a bounded repetition
  // of pairs).
  static constexpr int64_t kMaxCountedPairs = 10000;
  // Up to this many keys a const / enum object's keys may come in any order (2^n rules).
  static constexpr size_t kMaxAnyOrderKeys = 8;
  // Up to this many properties an object's keys come in any order when not strict (2^n rules).
  static constexpr size_t kMaxAnyOrderProperties = 6;

  std::string NewRule(const std::string& hint) {
    std::string clean;
    for (char c : hint) clean += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (clean.empty() || !std::isalpha(static_cast<unsigned char>(clean[0]))) clean = "s" + clean;
    if (clean.size() > 40) clean.resize(40);
    return prefix_ + clean + "_" + std::to_string(++n_rules_);
  }
  std::string Define(const std::string& hint, const std::string& body) {
    std::string name = NewRule(hint);
    rules_.emplace_back(name, body);
    return name;
  }

  // The subschema `ref` names and its absolute form (every $ref of doc_ is absolute).
  StatusOr<std::pair<const Json*, std::string>> Resolve(const std::string& ref) const {
    return resources_.Resolve(ref, "");
  }

  // Keywords of `s` other than annotations.
  static std::vector<std::string> Constraints(const Json& s) {
    std::vector<std::string> keys;
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (!IsAnnotation(it.key())) keys.push_back(it.key());
    }
    return keys;
  }

  Status CheckKeywords(const Json& s) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (!Unsupported().count(k) || Trivial(k, s)) continue;  // handled, or an annotation
      return InvalidArgument("JSON Schema keyword '" + k +
                             "' is not supported: it constrains the output in a way the grammar "
                             "does not enforce, so output could break it");
    }
    if (s.contains("nullable") && !s["nullable"].is_boolean()) {
      return InvalidArgument("'nullable' must be a boolean");
    }
    return Status::Ok();
  }

  // Inlines $ref and allOf into one schema (for merging).
  StatusOr<Json> Flatten(const Json& s, int depth) {
    if (depth > kMaxDepth) return InvalidArgument("schema nesting too deep (recursive allOf?)");
    if (s.is_boolean()) {
      if (!s.get<bool>()) return InvalidArgument("schema 'false' matches nothing");
      return Json::object();
    }
    Json out = s;
    if (out.contains("$ref")) {
      DI_ASSIGN_OR_RETURN(auto target, Resolve(out["$ref"].get<std::string>()));
      DI_ASSIGN_OR_RETURN(Json t, Flatten(*target.first, depth + 1));
      out.erase("$ref");
      DI_ASSIGN_OR_RETURN(out, MergeSchemas(t, out));
    }
    if (out.contains("allOf")) {
      Json subs = out["allOf"];
      out.erase("allOf");
      if (!subs.is_array()) return InvalidArgument("'allOf' must be an array");
      for (const Json& sub : subs) {
        DI_ASSIGN_OR_RETURN(Json f, Flatten(sub, depth + 1));
        DropLoneConditional(&f);
        DI_ASSIGN_OR_RETURN(out, MergeSchemas(out, f));
      }
    }
    // Its own unevaluated* see what it and its allOf / $ref evaluate, not what a parent adds.
    DI_RETURN_IF_ERROR(ResolveUnevaluated(&out));
    return out;
  }

  // `then` / `else` without `if`, and `if` without either, constrain nothing; dropped before a
  // merge, so that they do not pair with another subschema's.
  static void DropLoneConditional(Json* s) {
    if (!s->is_object()) return;
    if (!s->contains("if")) {
      s->erase("then");
      s->erase("else");
    } else if (!s->contains("then") && !s->contains("else")) {
      s->erase("if");
    }
  }

  // oneOf branches as generated (flattened, siblings merged in) must exclude each other.
  Status CheckOneOf(const Json& branches, const Json& siblings, int depth) {
    std::vector<Json> flat;
    for (const Json& b : branches) {
      DI_ASSIGN_OR_RETURN(Json f, Flatten(b, depth + 1));
      if (TypesDisjoint(siblings, f)) continue;  // left out of the grammar: matches nothing
      DI_ASSIGN_OR_RETURN(Json merged, MergeSchemas(siblings, f));
      flat.push_back(std::move(merged));
    }
    return CheckOneOfExclusive(
        flat, [this, depth](const Json& x) { return Flatten(x, depth + 1); }, options_.strict);
  }

  // Returns an EBNF expression (usually a rule name) for schema `s`.
  StatusOr<std::string> Visit(const Json& s, const std::string& hint, int depth) {
    if (depth > kMaxDepth) return InvalidArgument("schema nesting too deep");
    if (s.is_boolean()) {
      if (s.get<bool>()) return std::string("json_value");
      return InvalidArgument("schema 'false' matches nothing");
    }
    if (!s.is_object()) return InvalidArgument("a schema must be an object or a boolean");
    if (HasSchemaDependencies(s)) {
      DI_ASSIGN_OR_RETURN(Json branches, DependentSchemasAsAnyOf(s));
      return Visit(branches, hint, depth + 1);
    }
    if (s.contains("not")) return Not(s, hint, depth);
    if (s.contains("if")) return IfThenElse(s, hint, depth);
    DI_RETURN_IF_ERROR(CheckKeywords(s));
    const std::vector<std::string> constraints = Constraints(s);
    // A bare $ref becomes a shared (possibly recursive) rule.
    if (s.contains("$ref") && constraints.size() == 1) {
      DI_ASSIGN_OR_RETURN(auto target, Resolve(s["$ref"].get<std::string>()));
      // Keyed by the absolute form: one rule per target, however it is referred to.
      auto it = ref_rules_.find(target.second);
      if (it != ref_rules_.end()) return it->second;
      const std::string& ref = target.second;
      const std::string name = NewRule(ref.substr(ref.find_last_of("/#") + 1));
      ref_rules_[ref] = name;
      rules_.emplace_back(name, "");
      const size_t slot = rules_.size() - 1;
      DI_ASSIGN_OR_RETURN(std::string body, Visit(*target.first, name, depth + 1));
      rules_[slot].second = body;
      return name;
    }
    if (s.contains("$ref") || s.contains("allOf")) {
      DI_ASSIGN_OR_RETURN(Json flat, Flatten(s, depth));
      return Visit(flat, hint, depth + 1);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_array() || s[key].empty()) {
        return InvalidArgument(std::string("'") + key + "' must be a non-empty array");
      }
      if (std::any_of(s[key].begin(), s[key].end(), [](const Json& b) { return Never(b); })) {
        // A false branch matches nothing: the others decide (and a oneOf stays exclusive).
        Json pruned = s;
        pruned[key] = Json::array();
        for (const Json& b : s[key]) {
          if (!Never(b)) pruned[key].push_back(b);
        }
        if (pruned[key].empty()) {
          return InvalidArgument(std::string(key) + ": every branch is false");
        }
        return Visit(pruned, hint, depth + 1);
      }
      Json siblings = s;
      siblings.erase(key);
      if (std::string(key) == "oneOf") {
        // A branch that accepts every value: with another such branch every value matches
        // two (nothing matches the oneOf); beside one other branch B, exactly the values B
        // rejects match one (not B, as Not builds it).
        const auto always = std::count_if(s[key].begin(), s[key].end(), Always);
        if (always >= 2) {
          return InvalidArgument("oneOf: two branches accept every value, so nothing matches");
        }
        if (always == 1 && s[key].size() == 2 && !siblings.contains("not")) {
          Json negated = siblings;
          negated["not"] = Always(s[key][0]) ? s[key][1] : s[key][0];
          return Visit(negated, hint, depth + 1);
        }
      }
      const bool plain = Constraints(siblings).empty();
      if (std::string(key) == "oneOf") DI_RETURN_IF_ERROR(CheckOneOf(s[key], siblings, depth));
      std::string body;
      // Combinations of passing branches matter only to unevaluated* beside an anyOf.
      const bool combine =
          std::string(key) == "anyOf" && !plain &&
          (siblings.contains("unevaluatedProperties") || siblings.contains("unevaluatedItems"));
      std::vector<Json> flat;  // the branches flattened, when combine
      for (size_t i = 0; i < s[key].size(); ++i) {
        std::string alt;
        if (plain) {
          DI_ASSIGN_OR_RETURN(alt, Visit(s[key][i], hint + "_" + std::to_string(i), depth + 1));
        } else {
          DI_ASSIGN_OR_RETURN(Json branch, Flatten(s[key][i], depth + 1));
          if (combine) flat.push_back(branch);
          // A branch of other types than its siblings allow matches nothing: left out.
          if (TypesDisjoint(siblings, branch)) continue;
          DI_ASSIGN_OR_RETURN(Json merged, MergeSchemas(siblings, branch));
          DI_ASSIGN_OR_RETURN(alt, Visit(merged, hint + "_" + std::to_string(i), depth + 1));
        }
        body += (body.empty() ? "" : " | ") + alt;
      }
      if (combine) DI_RETURN_IF_ERROR(AnyOfCombinations(flat, siblings, hint, depth, &body));
      if (body.empty()) {
        return InvalidArgument(std::string(key) +
                               ": no branch has a type the schema allows, so "
                               "nothing matches");
      }
      return Define(hint, body);
    }
    if (s.contains("unevaluatedProperties") || s.contains("unevaluatedItems")) {
      Json resolved = s;
      DI_RETURN_IF_ERROR(ResolveUnevaluated(&resolved));
      return Visit(resolved, hint, depth + 1);
    }
    if (s.contains("const")) {
      DI_ASSIGN_OR_RETURN(std::string spellings, ValueSpellings(s["const"], hint + "_c"));
      return Define(hint, spellings);
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      DI_ASSIGN_OR_RETURN(types, TypeNames(s["type"]));
    }
    if (s.value("nullable", false) && !types.empty()) types.push_back("null");
    if (s.contains("enum")) return Enum(s, types, hint);
    if (types.empty()) {
      // Without "type", each keyword constrains only values of its own type; values of every
      // other type are free (integers are numbers).
      const std::vector<std::string> constrained = InferTypes(s);
      if (constrained.empty()) return std::string("json_value");
      std::string body;
      for (const char* t : {"object", "array", "string", "number", "boolean", "null"}) {
        std::string alt;
        if (std::string(t) == "array" && s.contains("contains") && Never(s["contains"])) {
          // No element matches `contains: false`: no array does (unless minContains is 0), and
          // the other types stay free.
          DI_ASSIGN_OR_RETURN(const int64_t min_contains, Count(s, "minContains", 1));
          if (min_contains > 0) continue;
        }
        if (std::find(constrained.begin(), constrained.end(), t) != constrained.end()) {
          DI_ASSIGN_OR_RETURN(alt, Typed(s, t, hint, depth));
        } else {
          alt = AnyOfType(t);
        }
        body += (body.empty() ? "" : " | ") + alt;
      }
      return Define(hint, body);
    }
    std::string body;
    std::set<std::string> seen;
    for (const std::string& t : types) {
      if (!seen.insert(t).second) continue;
      DI_ASSIGN_OR_RETURN(std::string alt, Typed(s, t, hint, depth));
      body += (body.empty() ? "" : " | ") + alt;
    }
    return Define(hint, body);
  }

  // Whether schema `s` accepts every value / no value, as far as the trivial forms go (true,
  // {}, false, and `not` of those).
  static bool Always(const Json& s) {
    if (s.is_boolean()) return s.get<bool>();
    if (!s.is_object()) return false;
    const std::vector<std::string> c = Constraints(s);
    return c.empty() || (c.size() == 1 && c[0] == "not" && Never(s["not"]));
  }
  static bool Never(const Json& s) {
    if (s.is_boolean()) return !s.get<bool>();
    if (!s.is_object()) return false;
    const std::vector<std::string> c = Constraints(s);
    return c.size() == 1 && c[0] == "not" && Always(s["not"]);
  }

  // `not`: of a schema that accepts everything (no value: an error), of one that accepts nothing
  // (dropped), or of a schema that constrains only `type` (the other types; `not integer` keeps
  // the numbers written with a fraction that is not zero). Anything else is refused: the
  // complement of a language is not a grammar we build.
  StatusOr<std::string> Not(const Json& s, const std::string& hint, int depth) {
    const Json& sub = s["not"];
    Json rest = s;
    rest.erase("not");
    if (Never(sub)) return Visit(rest, hint, depth + 1);
    if (Always(sub))
      return InvalidArgument("schema 'not' of a schema that matches everything: nothing matches");
    std::vector<std::string> sub_keys =
        sub.is_object() ? Constraints(sub) : std::vector<std::string>{};
    const std::vector<std::string> rest_keys = Constraints(rest);
    const bool rest_is_types = rest_keys.empty() || rest_keys == std::vector<std::string>{"type"};
    if (sub_keys.size() == 1 && (sub_keys[0] == "const" || sub_keys[0] == "enum") &&
        rest_is_types) {
      const Json values = sub_keys[0] == "const" ? Json::array({sub["const"]}) : sub["enum"];
      if (!values.is_array()) return InvalidArgument("'enum' must be an array");
      return NotValues(values, rest.value("type", Json()), hint);
    }
    if (!(sub_keys.size() == 1 && sub_keys[0] == "type" && rest_keys.empty())) {
      // Bounds, lengths and counts (and types beside other keywords): the complement as a
      // schema, which the rest of `s` is merged into.
      if (std::optional<Json> negated = NegatedSchema(sub)) {
        return Visit(Json{{"allOf", Json::array({rest, *negated})}}, hint, depth + 1);
      }
    }
    if (sub_keys.size() != 1 || sub_keys[0] != "type" || !rest_keys.empty()) {
      return InvalidArgument(
          "JSON Schema keyword 'not' is not supported here: only not {type: ...}, not {const: "
          "...} or not {enum: [...]} of scalars (beside at most a type), or not of true / false, "
          "is; output could break any other");
    }
    DI_ASSIGN_OR_RETURN(const std::vector<std::string> excluded, TypeNames(sub["type"]));
    const auto out = [&](const char* type) {
      return std::find(excluded.begin(), excluded.end(), type) != excluded.end();
    };
    std::string body;
    for (const char* type : {"object", "array", "string", "boolean", "null"}) {
      if (!out(type)) body += (body.empty() ? "" : " | ") + AnyOfType(type);
    }
    if (!out("number")) {
      // Integers are numbers: without them, a fraction with a digit other than 0, no exponent.
      body += (body.empty() ? "" : " | ") +
              std::string(out("integer") ? R"("-"? ("0" | [1-9] [0-9]*) "." [0-9]* [1-9])"
                                         : "json_number");
    }
    if (body.empty()) return InvalidArgument("'not' excludes every type: nothing matches");
    return Define(hint, body);
  }

  // unevaluatedProperties / unevaluatedItems beside anyOf see the annotations of every branch
  // that passes, not of one: {"foo": "foo", "bar": "bar", "baz": "baz"} passes
  // {"properties": {"foo": …}, "anyOf": [{"properties": {"bar": …}}, {"properties": {"baz": …}}],
  // "unevaluatedProperties": false}. One merged alternative per branch (above) misses the values
  // several branches pass together, so for up to kMaxAnyOfCombined branches each combination of
  // two or more is an alternative too (siblings and all its branches merged; a value the
  // combination passes passes the anyOf, and a value whose passing branches are that
  // combination is accepted by it: exact). A combination whose branches contradict each other
  // (their merge or its grammar fails) matches nothing and is left out.
  static constexpr size_t kMaxAnyOfCombined = 4;
  // Combinations over the whole schema: nested anyOfs would multiply them.
  static constexpr int kMaxCombinations = 256;
  // flat: the anyOf's branches, flattened; siblings hold unevaluatedProperties / Items.
  Status AnyOfCombinations(const std::vector<Json>& flat, const Json& siblings,
                           const std::string& hint, int depth, std::string* body) {
    const size_t n = flat.size();
    if (n < 2 || n > kMaxAnyOfCombined) return Status::Ok();
    for (uint32_t mask = 1; mask < (1u << n); ++mask) {
      if (std::popcount(mask) < 2) continue;
      if (++n_combinations_ > kMaxCombinations) {
        return InvalidArgument(
            "anyOf beside unevaluatedProperties / unevaluatedItems: more than " +
            std::to_string(kMaxCombinations) +
            " combinations of branches in the schema (each combination of passing branches "
            "evaluates its own properties)");
      }
      Json merged = siblings;
      bool disjoint = false;
      for (size_t i = 0; i < n && !disjoint; ++i) {
        if ((mask >> i & 1) == 0) continue;
        disjoint = TypesDisjoint(merged, flat[i]);
        if (disjoint) break;
        StatusOr<Json> next = MergeSchemas(merged, flat[i]);
        if (!next.ok()) disjoint = true;
        if (next.ok()) merged = std::move(*next);
      }
      if (disjoint) continue;
      // A failed grammar leaves no rule behind.
      const size_t n_rules = rules_.size();
      const auto refs = ref_rules_;
      StatusOr<std::string> alt = Visit(merged, hint + "_all" + std::to_string(mask), depth + 1);
      if (!alt.ok()) {
        rules_.resize(n_rules);
        ref_rules_ = refs;
        continue;
      }
      *body += (body->empty() ? "" : " | ") + *alt;
    }
    return Status::Ok();
  }

  // if I then T else E (each of then / else absent: true) = anyOf [I and T, (not I) and E]: the
  // branches exclude each other, so the grammar is exact. `not I` as NegatedSchema builds it
  // (bounds, lengths, counts, types); any other `if` is refused. if true / if false pick a
  // branch; `if` without then and else constrains nothing.
  StatusOr<std::string> IfThenElse(const Json& s, const std::string& hint, int depth) {
    Json rest = s;
    for (const char* k : {"if", "then", "else"}) rest.erase(k);
    const Json& cond = s["if"];
    const Json then_s = s.value("then", Json(true)), else_s = s.value("else", Json(true));
    const auto both = [](const Json& a, const Json& b) {
      return Json{{"allOf", Json::array({a, b})}};
    };
    if (!s.contains("then") && !s.contains("else")) {
      // A lone `if` constrains nothing, but unevaluated* beside it see its annotations when it
      // passes: anyOf [if, true] says exactly that (AnyOfCombinations).
      const bool annotations =
          rest.contains("unevaluatedProperties") || rest.contains("unevaluatedItems");
      if (annotations && !rest.contains("anyOf") && !Always(cond) && !Never(cond)) {
        rest["anyOf"] = Json::array({cond, true});
      }
      return Visit(rest, hint, depth + 1);
    }
    if (Always(cond)) return Visit(both(rest, then_s), hint, depth + 1);
    if (Never(cond)) return Visit(both(rest, else_s), hint, depth + 1);
    std::optional<Json> negated = NegatedSchema(cond);
    if (!negated && cond.is_object() &&
        (Constraints(cond) == std::vector<std::string>{"const"} ||
         Constraints(cond) == std::vector<std::string>{"enum"})) {
      negated = Json{{"not", cond}};  // `not` of scalar values (Not: NotValues)
    }
    if (!negated) {
      return InvalidArgument(
          "JSON Schema keyword 'if' is supported when its schema is a type, numeric bounds, "
          "string lengths, item counts or scalar const / enum values (its complement is then a "
          "schema); not this one");
    }
    // A false then / else leaves its branch out (allOf with false would be an error).
    Json branches = Json::array();
    if (!Never(then_s)) branches.push_back(both(cond, then_s));
    if (!Never(else_s)) branches.push_back(both(*negated, else_s));
    if (branches.empty())
      return InvalidArgument("if: then and else are both false: nothing matches");
    Json choice = {{"anyOf", branches}};
    return Visit(both(rest, choice), hint, depth + 1);
  }

  // Values of `types` (a type keyword's value; null: every type) other than `values` (not
  // {const} / not {enum}). Exact for what it writes, and it writes a subset of the complement:
  // strings without escapes that differ from every excluded string; integers other than the
  // excluded ones and numbers with a fraction that ends in a digit other than 0 (no exponent, so
  // no spelling of an excluded number, 1.0e0 for 1, slips through). Excluded objects and arrays,
  // and non-integer numbers, are refused (their complement is not built).
  StatusOr<std::string> NotValues(const Json& values, const Json& types, const std::string& hint) {
    std::vector<std::string> allowed;
    if (types.is_string()) allowed.push_back(types.get<std::string>());
    if (types.is_array()) {
      for (const Json& t : types) {
        if (t.is_string()) allowed.push_back(t.get<std::string>());
      }
    }
    const auto wants = [&](const char* t) {
      return allowed.empty() || std::find(allowed.begin(), allowed.end(), t) != allowed.end();
    };
    std::vector<std::string> strings;
    std::vector<int64_t> integers;
    bool no_true = false, no_false = false, no_null = false;
    for (const Json& v : values) {
      if (v.is_string()) {
        strings.push_back(v.get<std::string>());
      } else if (v.is_number()) {
        const double d = v.get<double>();
        if (!(std::fabs(d) <= 1e15) || d != static_cast<double>(static_cast<int64_t>(d))) {
          return InvalidArgument("'not' of a number that is not an integer (" + v.dump() +
                                 ") is not supported");
        }
        integers.push_back(static_cast<int64_t>(d));
      } else if (v.is_boolean()) {
        (v.get<bool>() ? no_true : no_false) = true;
      } else if (v.is_null()) {
        no_null = true;
      } else {
        return InvalidArgument("'not' of an object or array value is not supported");
      }
    }
    std::string body;
    const auto add = [&](const std::string& alt) { body += (body.empty() ? "" : " | ") + alt; };
    if (wants("object")) add("json_object");
    if (wants("array")) add("json_array");
    if (wants("string")) add(strings.empty() ? "json_string" : KeyNotIn(strings, hint));
    if (wants("number") || wants("integer")) {
      if (integers.empty() && wants("number")) {
        add("json_number");
      } else {
        DI_ASSIGN_OR_RETURN(std::string ints, IntegersOtherThan(integers));
        add(ints);
        if (wants("number")) add(R"("-"? ("0" | [1-9] [0-9]*) "." [0-9]* [1-9])");
      }
    }
    if (wants("boolean")) {
      if (!no_true) add("\"true\"");
      if (!no_false) add("\"false\"");
    }
    if (wants("null") && !no_null) add("\"null\"");
    if (body.empty()) return InvalidArgument("'not' excludes every value: nothing matches");
    return Define(hint + "_not", body);
  }

  // The numbers that are multiples of m = p / 10^d, m > 0 an exact decimal (the schema's own text
  // of it: "1.5", "0.0001", "1e-8"; p up to 1000 after dropping trailing zeros), as decimal text
  // without exponent: x is a multiple iff x * 10^d is an integer divisible by p. A digit-by-digit
  // remainder automaton: one rule per remainder of the integer part, and per remainder and count
  // j <= d of the fraction digits read (a fraction digit past the d-th must be 0). With
  // `integer_only` (type integer) no fraction is written. Integers (d = 0) are as before.
  enum class Sign { kAny, kNonNegative, kNonPositive };

  StatusOr<std::string> MultipleOf(const Json& m_json, bool integer_only, Sign sign) {
    if (!m_json.is_number() || m_json.get<double>() <= 0) {
      return InvalidArgument("'multipleOf' must be a number above 0");
    }
    int64_t p = 0;
    int d = 0;
    if (!ExactDecimal(m_json.dump(), &p, &d) || p > 1000) {
      return InvalidArgument(
          "JSON Schema keyword 'multipleOf' is supported for decimals p * 10^-d with p up to 1000 "
          "(" +
          m_json.dump() + " given: its remainder automaton would need too many states)");
    }
    if (integer_only) {
      // An integer n is a multiple iff n * 10^d is divisible by p: n by p / gcd(p, 10^d).
      for (int i = 0; i < d; ++i) {
        const int64_t g = std::gcd(p, int64_t{10});
        if (g == 1) break;
        p /= g;
      }
      d = 0;
    }
    const std::string key =
        std::to_string(p) + "e-" + std::to_string(d) + "s" + std::to_string(static_cast<int>(sign));
    auto [it, added] = multiple_rules_.try_emplace(key);
    if (!added) return it->second;
    const std::string tag = std::to_string(p) + (d > 0 ? "_" + std::to_string(d) : "");
    // (r * 10^k) mod p.
    auto shifted = [p](int64_t r, int k) {
      for (int i = 0; i < k; ++i) r = r * 10 % p;
      return r;
    };
    // After j fraction digits with every digit read worth c mod p: whether the number may end
    // here, and whether some continuation still ends in a multiple (live). A fraction digit
    // past the d-th must be 0.
    const auto P = static_cast<size_t>(p);
    auto ends = [&](int j, int64_t c) { return j >= 1 && shifted(c, d - j) == 0; };
    std::vector<std::vector<uint8_t>> live(static_cast<size_t>(d) + 1, std::vector<uint8_t>(P));
    for (int j = d; j >= 0; --j) {
      for (int64_t c = 0; c < p; ++c) {
        bool ok = ends(j, c) || (j == d && c == 0);
        for (int dig = 0; dig <= 9 && !ok && j < d; ++dig) ok = live[j + 1][(c * 10 + dig) % p];
        live[j][c] = ok;
      }
    }
    // whole[r]: the rest after integer digits worth r mod p; frac[j][c]: after j fraction digits.
    std::vector<std::string> whole(P);
    std::vector<std::vector<std::string>> frac(static_cast<size_t>(d) + 1,
                                               std::vector<std::string>(P));
    for (auto& r : whole) r = NewRule("multiple_" + tag);
    for (int j = 0; j <= d; ++j) {
      for (int64_t c = 0; c < p; ++c) {
        if (live[j][c]) frac[j][c] = NewRule("multiple_" + tag + "_frac");
      }
    }
    auto alt = [](std::string* body, const std::string& a) {
      *body += (body->empty() ? "" : " | ") + a;
    };
    // What may follow integer digits worth r: the end (a multiple without fraction), or the
    // fraction.
    auto after_whole = [&](int64_t r) {
      std::string tail;
      if (shifted(r, d) == 0) alt(&tail, "\"\"");
      if (d > 0 && live[0][r]) alt(&tail, "\".\" " + frac[0][r]);
      return tail;
    };
    for (int64_t r = 0; r < p; ++r) {
      std::string body;
      for (int dig = 0; dig <= 9; ++dig) {
        alt(&body, "\"" + std::to_string(dig) + "\" " + whole[(r * 10 + dig) % p]);
      }
      const std::string tail = after_whole(r);
      if (!tail.empty()) alt(&body, tail);
      rules_.emplace_back(whole[r], body);
    }
    for (int j = 0; j <= d; ++j) {
      for (int64_t c = 0; c < p; ++c) {
        if (!live[j][c]) continue;
        std::string body;
        if (j < d) {
          for (int dig = 0; dig <= 9; ++dig) {
            const int64_t next = (c * 10 + dig) % p;
            if (live[j + 1][next]) {
              alt(&body, "\"" + std::to_string(dig) + "\" " + frac[j + 1][next]);
            }
          }
          if (ends(j, c)) alt(&body, "\"\"");
        } else {
          body = "\"0\"*";  // c == 0: a multiple; trailing zeros keep it one
        }
        rules_.emplace_back(frac[j][c], body);
      }
    }
    // No "-0" alone (as for integers); "-0.5" is a number like any other. A sign bound keeps
    // the "-" forms (kNonPositive) or the others (kNonNegative), "0" either way.
    const std::string minus = sign == Sign::kAny           ? "\"-\"? "
                              : sign == Sign::kNonPositive ? "\"-\" "
                                                           : "";
    std::string start = "\"0\"";
    if (d > 0 && live[0][0]) start += " | " + minus + "\"0\" \".\" " + frac[0][0];
    start += " | " + minus + "(";
    for (int dig = 1; dig <= 9; ++dig) {
      start += (dig > 1 ? " | \"" : "\"") + std::to_string(dig) + "\" " + whole[dig % p];
    }
    start += ")";
    it->second = Define("multiple_of_" + tag, start);
    return it->second;
  }

  // `text` (a JSON number) as p * 10^-d with p a positive integer without trailing zeros of
  // at most 18 digits, d >= 0; false when it is not such a number.
  static bool ExactDecimal(const std::string& text, int64_t* p, int* d) {
    std::string digits;
    int exp10 = 0;
    size_t i = 0;
    bool point = false;
    for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
      if (text[i] == '.') {
        point = true;
      } else if (std::isdigit(static_cast<unsigned char>(text[i]))) {
        digits += text[i];
        if (point) --exp10;
      } else {
        return false;
      }
    }
    if (i < text.size()) {
      try {
        exp10 += std::stoi(text.substr(i + 1));
      } catch (...) {
        return false;
      }
    }
    while (!digits.empty() && digits.front() == '0') digits.erase(digits.begin());
    while (!digits.empty() && digits.back() == '0') digits.pop_back(), ++exp10;
    if (digits.empty() || digits.size() > 18 || exp10 < -18) return false;
    int64_t v = std::stoll(digits);
    for (; exp10 > 0; --exp10) {
      if (v > int64_t{1} << 55) return false;
      v *= 10;
    }
    *p = v;
    *d = -exp10;
    return true;
  }

  // Any value of JSON type `t`.
  static std::string AnyOfType(const std::string& t) {
    if (t == "object") return "json_object";
    if (t == "array") return "json_array";
    if (t == "string") return "json_string";
    if (t == "number") return "json_number";
    if (t == "boolean") return "(\"true\" | \"false\")";
    return "\"null\"";
  }

  static std::vector<std::string> InferTypes(const Json& s) {
    std::vector<std::string> t;
    auto any = [&](std::initializer_list<const char*> keys) {
      for (const char* k : keys) {
        if (s.contains(k)) return true;
      }
      return false;
    };
    if (any({"properties", "required", "additionalProperties", "minProperties", "maxProperties",
             "dependentRequired", "dependencies", "patternProperties", "propertyNames",
             "unevaluatedProperties"})) {
      t.push_back("object");
    }
    if (any({"items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains",
             "uniqueItems", "unevaluatedItems"})) {
      t.push_back("array");
    }
    if (any({"minLength", "maxLength", "pattern", "format"})) t.push_back("string");
    if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})) {
      t.push_back("number");
    }
    return t;
  }

  StatusOr<std::string> Enum(const Json& s, const std::vector<std::string>& types,
                             const std::string& hint) {
    if (!s["enum"].is_array() || s["enum"].empty()) {
      return InvalidArgument("'enum' must be a non-empty array");
    }
    std::string body;
    for (const Json& v : s["enum"]) {
      const std::string vt = JsonTypeOf(v);
      bool ok = types.empty();
      for (const std::string& t : types) {
        ok |=
            t == vt || (t == "number" && vt == "integer") || (t == "integer" && IntegralNumber(v));
      }
      if (!ok) continue;
      // A whole double where only integers are allowed is written as an integer (strict mode
      // writes one spelling, and integers there have no fraction).
      const std::optional<int64_t> whole = WholeDouble(v);
      const bool integer_only =
          whole && !types.empty() && std::find(types.begin(), types.end(), "number") == types.end();
      const Json value = integer_only ? Json(*whole) : v;
      DI_ASSIGN_OR_RETURN(std::string spellings, ValueSpellings(value, hint + "_e"));
      body += (body.empty() ? "" : " | ") + spellings;
    }
    if (body.empty()) return InvalidArgument("no 'enum' value has the schema's type");
    return Define(hint, body);
  }

  StatusOr<std::string> Typed(const Json& s, const std::string& type, const std::string& hint,
                              int depth) {
    if (type == "null") return std::string("\"null\"");
    if (type == "boolean") return std::string("(\"true\" | \"false\")");
    if (type == "integer" || type == "number") {
      NumberBounds b;
      DI_RETURN_IF_ERROR(Bounds(s, &b));
      const bool bounded = b.minimum || b.maximum;
      if (s.contains("multipleOf") && !Trivial("multipleOf", s)) {
        // Beside a bound, only a sign: minimum 0 or maximum 0 alone.
        Sign sign = Sign::kAny;
        if (b.minimum && !b.maximum && *b.minimum == 0 && !b.exclusive_minimum) {
          sign = Sign::kNonNegative;
        } else if (b.maximum && !b.minimum && *b.maximum == 0 && !b.exclusive_maximum) {
          sign = Sign::kNonPositive;
        } else if (bounded) {
          return InvalidArgument(
              "JSON Schema keyword 'multipleOf' is not supported together with minimum/maximum "
              "(other than a minimum or maximum of 0 alone)");
        }
        if (type != "integer") {
          // Multiples of a whole m are whole: a fraction of zeros (not strict) as for integers.
          DI_ASSIGN_OR_RETURN(std::string multiples, MultipleOf(s["multipleOf"], false, sign));
          return IntegralNumber(s["multipleOf"]) ? WithZeroFraction(multiples) : multiples;
        }
        DI_ASSIGN_OR_RETURN(std::string multiples, MultipleOf(s["multipleOf"], true, sign));
        return WithZeroFraction(multiples);
      }
      if (type == "integer") {
        DI_ASSIGN_OR_RETURN(std::string integers, IntegerRangeEbnf(b));
        return WithZeroFraction(integers);
      }
      if (!bounded) return std::string("json_number");
      return NumberRangeEbnf(b);
    }
    if (type == "string") return String(s, hint);
    if (type == "object") return Object(s, hint, depth);
    if (type == "array") return Array(s, hint, depth);
    return InvalidArgument("unknown type '" + type + "'");
  }

  static Status Bounds(const Json& s, NumberBounds* b) {
    auto number = [&](const char* k) -> StatusOr<double> {
      if (!s[k].is_number()) return InvalidArgument(std::string("'") + k + "' must be a number");
      return s[k].get<double>();
    };
    if (s.contains("minimum")) {
      DI_ASSIGN_OR_RETURN(double v, number("minimum"));
      b->minimum = v;
    }
    if (s.contains("maximum")) {
      DI_ASSIGN_OR_RETURN(double v, number("maximum"));
      b->maximum = v;
    }
    for (const char* k : {"exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      const bool is_min = k[9] == 'M' && k[10] == 'i';
      std::optional<double>& bound = is_min ? b->minimum : b->maximum;
      bool& excl = is_min ? b->exclusive_minimum : b->exclusive_maximum;
      if (s[k].is_boolean()) {  // draft 4: a flag on minimum/maximum
        excl = s[k].get<bool>();
        continue;
      }
      DI_ASSIGN_OR_RETURN(double v, number(k));
      const bool tighter = !bound || (is_min ? v >= *bound : v <= *bound);
      if (tighter) bound = v, excl = true;
    }
    return Status::Ok();
  }

  StatusOr<std::string> String(const Json& s, const std::string& hint) {
    const bool has_len = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("format") &&
        !IsStandardFormat(s["format"].is_string() ? s["format"].get<std::string>() : "")) {
      // Not a format JSON Schema defines (int32, binary, password, ...): an annotation.
      Json plain = s;
      plain.erase("format");
      return String(plain, hint);
    }
    if (s.contains("format")) {
      if (s.contains("pattern") || has_len) {
        return InvalidArgument("'format' together with 'pattern' or a length is not supported");
      }
      DI_ASSIGN_OR_RETURN(std::string body, FormatEbnf(s["format"].get<std::string>()));
      return "\"\\\"\" " + body + " \"\\\"\"";
    }
    if (s.contains("pattern")) {
      if (has_len) {
        return InvalidArgument("'pattern' together with minLength/maxLength is not supported");
      }
      if (!s["pattern"].is_string()) return InvalidArgument("'pattern' must be a string");
      // A JSON Schema pattern is a search (ECMAScript RegExp.test): unanchored sides take any
      // characters.
      DI_ASSIGN_OR_RETURN(std::string e, RegexToEbnfExpression(s["pattern"].get<std::string>(),
                                                               /*json_string_content=*/true,
                                                               &options_.string_excluded,
                                                               /*search_any=*/"json_char"));
      return Define(hint + "_pattern", "\"\\\"\" " + e + " \"\\\"\"");
    }
    if (!has_len) return std::string("json_string");
    const int64_t lo = s.value("minLength", 0);
    const int64_t hi = s.contains("maxLength") ? s["maxLength"].get<int64_t>() : -1;
    if (lo < 0 || (hi >= 0 && hi < lo)) return InvalidArgument("minLength above maxLength");
    if (lo > 10000 || hi > 10000) return InvalidArgument("string lengths above 10000");
    // One shared rule per length range: every property with the same bounds reuses its states
    // and mask cache entries (38 strings of maxLength 256 would otherwise each build their own).
    const std::string range = std::to_string(lo) + "," + (hi >= 0 ? std::to_string(hi) : "");
    auto [it, added] = length_rules_.try_emplace(range);
    if (added) {
      it->second = Define("string_len_" + std::to_string(lo) + "_" + std::to_string(hi),
                          "\"\\\"\" json_char{" + range + "} \"\\\"\"");
    }
    return it->second;
  }

  // A JSON key (with quotes) that is none of `names` and uses no escapes: a trie over the names.
  std::string KeyNotIn(const std::vector<std::string>& names, const std::string& hint) {
    struct TrieNode {
      std::map<uint32_t, int> next;
      bool terminal = false;
    };
    std::vector<TrieNode> trie(1);
    for (const std::string& n : names) {
      int at = 0;
      bool ok = true;
      for (size_t p = 0; p < n.size() && ok;) {
        int32_t cp = DecodeUtf8(n, &p);
        if (cp < 0x20 || cp == '"' || cp == '\\' || options_.string_excluded.Contains(cp)) {
          ok = false;  // never produced by an unescaped key: nothing to exclude
          break;
        }
        auto it = trie[at].next.find(cp);
        if (it == trie[at].next.end()) {
          trie.emplace_back();
          it = trie[at].next.emplace(cp, static_cast<int>(trie.size() - 1)).first;
        }
        at = it->second;
      }
      if (ok) trie[at].terminal = true;
    }
    // One rule per trie node; children first so the names exist.
    std::vector<std::string> rule_of(trie.size());
    for (int i = static_cast<int>(trie.size()) - 1; i >= 0; --i)
      rule_of[i] = NewRule(hint + "_key");
    for (size_t i = 0; i < trie.size(); ++i) {
      std::string body;
      if (!trie[i].terminal) body = "\"\\\"\"";
      CharClass other = StringChars(options_.string_excluded);
      for (const auto& [cp, child] : trie[i].next) {
        std::string lit;
        AppendUtf8(cp, &lit);
        body += (body.empty() ? "" : " | ") + EbnfQuote(lit) + " " + rule_of[child];
        CharClass one;
        one.Add(cp);
        other = other.Minus(one);
      }
      if (!other.empty()) body += (body.empty() ? "" : " | ") + other.ToEbnf() + " json_key_rest";
      rules_.emplace_back(rule_of[i], body);
    }
    return "\"\\\"\" " + rule_of[0];
  }

  // An object whose schema names no property (no properties, patternProperties, required,
  // dependencies, propertyNames, additionalProperties or unevaluatedProperties): any keys, as an
  // absent additionalProperties allows, minProperties / maxProperties counting the pairs.
  // (An object that names properties gets no extra keys unless additionalProperties says so:
  // docs/structured_outputs.md.) Null when the schema names properties.
  StatusOr<std::string> FreeFormObject(const Json& s, const std::string& hint) {
    for (const char* key :
         {"properties", "patternProperties", "required", "dependentRequired", "dependencies",
          "dependentSchemas", "propertyNames", "additionalProperties", "unevaluatedProperties"}) {
      if (s.contains(key)) return std::string();
    }
    DI_ASSIGN_OR_RETURN(const int64_t lo, Count(s, "minProperties", 0));
    DI_ASSIGN_OR_RETURN(const int64_t hi, Count(s, "maxProperties", -1));
    if (hi >= 0 && lo > hi) {
      return InvalidArgument("minProperties " + std::to_string(lo) + " above maxProperties " +
                             std::to_string(hi) + ": the schema matches nothing");
    }
    if (lo == 0 && hi < 0) return std::string("json_object");
    if (lo > kMaxCountedPairs || hi > kMaxCountedPairs) {
      return InvalidArgument("minProperties / maxProperties above " +
                             std::to_string(kMaxCountedPairs) + " on a free-form object");
    }
    if (hi == 0) return std::string("\"{\" \"}\"");
    const std::string pair = Define(hint + "_pair", "json_string colon json_value");
    // The pairs after the first: at least lo - 1, at most hi - 1 (unbounded without hi).
    const int64_t more_lo = std::max<int64_t>(lo - 1, 0);
    std::string more = "(comma " + pair + ")";
    more = hi < 0 ? more + "{" + std::to_string(more_lo) + ",}"
                  : more + "{" + std::to_string(more_lo) + "," + std::to_string(hi - 1) + "}";
    const std::string pairs = pair + " " + more;
    return Define(hint, "\"{\" " + (lo == 0 ? "(" + pairs + ")?" : pairs) + " \"}\"");
  }

  StatusOr<std::string> Object(const Json& s, const std::string& hint, int depth) {
    DI_ASSIGN_OR_RETURN(std::string free_form, FreeFormObject(s, hint));
    if (!free_form.empty()) return free_form;
    std::vector<std::pair<std::string, std::string>> props;  // key literal, value expr
    std::vector<std::string> prop_names;                     // their names
    std::vector<std::string> names;
    std::vector<bool> required;
    std::set<std::string> req;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return InvalidArgument("'required' must be an array");
      for (const Json& r : s["required"]) req.insert(r.get<std::string>());
    }
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) return InvalidArgument("'properties' must be an object");
      for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
        names.push_back(it.key());  // never an additional key, even when forbidden
        DI_ASSIGN_OR_RETURN(Json value_schema, WithPatterns(s, it.key(), it.value()));
        if (Never(value_schema)) {
          // A property that may not appear: left out, unless it is required.
          if (req.count(it.key())) {
            return InvalidArgument("property '" + it.key() +
                                   "' is required but its schema is false (or propertyNames or a "
                                   "patternProperties schema forbids it), which matches nothing");
          }
          continue;
        }
        DI_ASSIGN_OR_RETURN(std::string v, Visit(value_schema, hint + "_" + it.key(), depth + 1));
        props.emplace_back(Literal(Json(it.key())), v);
        prop_names.push_back(it.key());
        required.push_back(req.count(it.key()) > 0);
      }
    }
    // A required property that `properties` does not list is an additional property: its value
    // follows additionalProperties (any value when absent; none when false). In the order of
    // `required`.
    const Json extra_schema = s.value("additionalProperties", Json(true));
    // Keys beyond the listed ones: where additionalProperties allows them, or where it is absent
    // and the options are not strict (JsonSchemaOptions::strict).
    const bool extras_allowed =
        extra_schema != Json(false) && (s.contains("additionalProperties") || !options_.strict);
    std::vector<std::string> req_order;
    for (const Json& r : s.value("required", Json::array())) {
      if (std::find(req_order.begin(), req_order.end(), r.get<std::string>()) == req_order.end()) {
        req_order.push_back(r.get<std::string>());
      }
    }
    // Extra keys under a propertyNames schema: its strings, when no name is listed or
    // mentioned by a dependency (an extra key would otherwise have to avoid those too).
    const bool names_check = s.contains("propertyNames") && s["propertyNames"] != Json(true) &&
                             s["propertyNames"] != Json::object();
    const bool no_names =
        names.empty() && !s.contains("dependentRequired") && !s.contains("dependencies");
    if (names_check && extras_allowed && !no_names) {
      return InvalidArgument(
          "JSON Schema keyword 'propertyNames' is supported beside extra keys only where no "
          "property is listed (additionalProperties false, or absent in strict mode, otherwise): "
          "an extra key would have to meet it and avoid the listed names");
    }
    if (s.contains("patternProperties") && extras_allowed && !s["patternProperties"].empty()) {
      return InvalidArgument(
          "JSON Schema keyword 'patternProperties' is supported where no extra keys are generated "
          "only (additionalProperties false, or absent in strict mode): an extra key matching a "
          "pattern would need the pattern's schema instead");
    }
    // A name `properties` does not list, written as a property whose value meets value_schema.
    const auto add_unlisted = [&](const std::string& name, const Json& value_schema,
                                  bool must) -> Status {
      std::string value_hint = hint;
      value_hint += "_";
      value_hint += name;
      DI_ASSIGN_OR_RETURN(std::string v, Visit(value_schema, value_hint, depth + 1));
      names.push_back(name);
      props.emplace_back(Literal(Json(name)), v);
      prop_names.push_back(name);
      required.push_back(must);
      return Status::Ok();
    };
    for (const std::string& r : req_order) {
      if (std::find(names.begin(), names.end(), r) != names.end()) continue;
      DI_ASSIGN_OR_RETURN(Json by_pattern, WithPatterns(s, r, Json()));
      if (Never(by_pattern)) {
        return InvalidArgument("property '" + r +
                               "' is required but propertyNames rejects it or a "
                               "patternProperties schema that matches it is false");
      }
      // A name a pattern matches takes the pattern's schema, any other additionalProperties.
      if (by_pattern.is_null() && extra_schema == Json(false)) {
        return InvalidArgument("property '" + r +
                               "' is required but additionalProperties false forbids it");
      }
      DI_RETURN_IF_ERROR(add_unlisted(r, by_pattern.is_null() ? extra_schema : by_pattern, true));
    }
    DI_ASSIGN_OR_RETURN(const auto deps, Dependencies(s));
    if (extras_allowed) {
      // A name a dependency mentions that is not listed may still appear (as an extra key):
      // an optional property after the listed ones, so that the dependency can be checked.
      // The names needed come before the names that need them.
      std::vector<std::string> mentioned;
      for (const auto& [trigger, needed] : deps) {
        mentioned.insert(mentioned.end(), needed.begin(), needed.end());
      }
      for (const auto& [trigger, needed] : deps) mentioned.push_back(trigger);
      for (const std::string& name : mentioned) {
        if (std::find(names.begin(), names.end(), name) != names.end()) continue;
        DI_ASSIGN_OR_RETURN(Json by_pattern, WithPatterns(s, name, Json()));
        if (Never(by_pattern)) continue;
        DI_RETURN_IF_ERROR(
            add_unlisted(name, by_pattern.is_null() ? extra_schema : by_pattern, false));
      }
    }
    std::string extra;  // one additional "key": value pair, or empty
    if (extras_allowed) {
      DI_ASSIGN_OR_RETURN(std::string v, Visit(extra_schema, hint + "_extra", depth + 1));
      std::vector<std::string> taken = names;  // a dependency's trigger is never an extra key
      for (const auto& [trigger, needed] : deps) taken.push_back(trigger);
      std::string key = KeyNotIn(taken, hint);
      if (names_check) {  // no_names: the keys are exactly propertyNames' strings
        DI_ASSIGN_OR_RETURN(
            key, Visit(Json{{"allOf", Json::array({Json{{"type", "string"}}, s["propertyNames"]})}},
                       hint + "_name", depth + 1));
      }
      extra = Define(hint + "_extra_pair", key + " colon " + v);
    } else if (!s.contains("minProperties") && !s.contains("maxProperties")) {
      DI_ASSIGN_OR_RETURN(extra, PatternPair(s, names, deps, hint, depth));
    }
    // after[i]: properties i.. when something was already written (each starts with a comma);
    // first[i]: the same when nothing was written yet.
    const size_t n = props.size();
    const bool counted = s.contains("minProperties") || s.contains("maxProperties");
    if (!options_.strict && n >= 1 && n <= kMaxAnyOrderProperties && (!counted || extra.empty())) {
      DI_ASSIGN_OR_RETURN(const int64_t lo, Count(s, "minProperties", 0));
      DI_ASSIGN_OR_RETURN(const int64_t hi, Count(s, "maxProperties", -1));
      // (trigger bit, needed bits) per dependency among the properties (a needed name that is
      // not one is never written: its trigger may not be either).
      std::vector<std::pair<uint32_t, uint32_t>> rules;
      const auto bit_of = [&](const std::string& name) -> uint32_t {
        const auto it = std::find(prop_names.begin(), prop_names.end(), name);
        return it == prop_names.end() ? 0 : uint32_t{1} << (it - prop_names.begin());
      };
      for (const auto& [trigger, needed] : deps) {
        if (bit_of(trigger) == 0) continue;
        uint32_t need = 0;
        bool possible = true;
        for (const std::string& name : needed) {
          possible = possible && bit_of(name) != 0;
          need |= bit_of(name);
        }
        rules.emplace_back(bit_of(trigger), possible ? need : ~uint32_t{0});
      }
      return AnyOrderObject(props, required, extra, rules, lo, hi, hint);
    }
    if (counted || !deps.empty()) {
      return CountedObject(s, props, prop_names, required, extra, deps, hint);
    }
    std::vector<std::string> after(n + 1), first(n + 1);
    after[n] = extra.empty() ? "\"\"" : "(comma " + extra + ")*";
    first[n] = extra.empty() ? "\"\"" : "(" + extra + " (comma " + extra + ")*)?";
    for (size_t i = n; i-- > 0;) {
      const std::string pair = props[i].first + " colon " + props[i].second;
      std::string a = "comma " + pair + " " + after[i + 1];
      std::string f = pair + " " + after[i + 1];
      if (!required[i]) a += " | " + after[i + 1], f += " | " + first[i + 1];
      after[i] = Define(hint + "_a" + std::to_string(i), a);
      first[i] = Define(hint + "_f" + std::to_string(i), f);
    }
    return "\"{\" " + first[0] + " \"}\"";
  }

  // Not strict: the properties in any order, each at most once, the required ones all, extra
  // pairs (when `extra` is not empty) anywhere between them. One rule per set of properties
  // written (`mask`; and one for nothing written yet). The object may end where every
  // dependency (trigger bit, needed bits) written has its names and, without extras, the count
  // of properties is within [lo, hi] (hi < 0: no maximum); a state that cannot reach such an
  // end is left out. InvalidArgument when the start cannot.
  StatusOr<std::string> AnyOrderObject(
      const std::vector<std::pair<std::string, std::string>>& props,
      const std::vector<bool>& required, const std::string& extra,
      const std::vector<std::pair<uint32_t, uint32_t>>& deps, int64_t lo, int64_t hi,
      const std::string& hint) {
    const size_t n = props.size();
    std::vector<std::string> pair(n);
    uint32_t needed = 0;
    for (size_t i = 0; i < n; ++i) {
      pair[i] =
          Define(hint + "_pair" + std::to_string(i), props[i].first + " colon " + props[i].second);
      if (required[i]) needed |= uint32_t{1} << i;
    }
    const uint32_t full = (uint32_t{1} << n) - 1;
    const auto count = [](uint32_t mask) { return static_cast<int64_t>(std::popcount(mask)); };
    const auto can_end = [&](uint32_t mask) {
      if ((mask & needed) != needed) return false;
      for (const auto& [trigger, need] : deps) {
        if ((mask & trigger) != 0 && (mask & need) != need) return false;
      }
      return !extra.empty() || (count(mask) >= lo && (hi < 0 || count(mask) <= hi));
    };
    // Another property may follow mask (without extras, not beyond the maximum).
    const auto can_add = [&](uint32_t mask) {
      return !extra.empty() || hi < 0 || count(mask) < hi;
    };
    // live[mask]: some continuation from mask ends (properties are only ever added).
    std::vector<uint8_t> live(full + 1, 0);
    for (uint32_t mask = full + 1; mask-- > 0;) {
      live[mask] = can_end(mask);
      for (size_t i = 0; i < n && !live[mask] && can_add(mask); ++i) {
        const uint32_t bit = uint32_t{1} << i;
        if ((mask & bit) == 0) live[mask] = live[mask | bit];
      }
    }
    if (!live[0]) {
      return InvalidArgument(
          "the properties the schema allows cannot meet its required names, dependencies and "
          "property counts: nothing matches");
    }
    // rest[mask]: what may follow once the properties in mask (and maybe extras) are written;
    // names are reserved first, since a rule refers to the rules of larger masks and itself.
    std::vector<std::string> rest(full + 1);
    for (uint32_t mask = 0; mask <= full; ++mask) {
      if (live[mask]) rest[mask] = NewRule(hint + "_any" + std::to_string(mask));
    }
    const auto body = [&](uint32_t mask, const std::string& sep) {
      std::string out;
      const auto add = [&](const std::string& alt) { out += (out.empty() ? "" : " | ") + alt; };
      for (size_t i = 0; i < n && can_add(mask); ++i) {
        const uint32_t bit = uint32_t{1} << i;
        if ((mask & bit) == 0 && live[mask | bit]) add(sep + pair[i] + " " + rest[mask | bit]);
      }
      if (!extra.empty()) add(sep + extra + " " + rest[mask]);
      if (can_end(mask)) add("\"\"");
      return out;
    };
    for (uint32_t mask = 0; mask <= full; ++mask) {
      if (live[mask]) rules_.emplace_back(rest[mask], body(mask, "comma "));
    }
    return "\"{\" " + Define(hint + "_any_first", body(0, "")) + " \"}\"";
  }

  // Where no other extra keys are generated: the pairs whose key matches the one pattern of
  // patternProperties, its schema their value. Exact when no listed or dependency name matches
  // the pattern (such a key would need both schemas) and no propertyNames applies; empty
  // otherwise (keys matching a pattern are then not generated), with several patterns (a key
  // matching two needs both schemas), and when the regex compiler refuses the pattern.
  StatusOr<std::string> PatternPair(const Json& s, const std::vector<std::string>& names,
                                    const std::map<std::string, std::vector<std::string>>& deps,
                                    const std::string& hint, int depth) {
    if (!s.contains("patternProperties") || s.contains("propertyNames")) return std::string();
    const Json& patterns = s["patternProperties"];
    if (!patterns.is_object() || patterns.size() != 1 || Never(patterns.begin().value())) {
      return std::string();
    }
    const std::string& pattern = patterns.begin().key();
    std::vector<std::string> known = names;
    for (const auto& [trigger, needed] : deps) {
      known.push_back(trigger);
      known.insert(known.end(), needed.begin(), needed.end());
    }
    for (const std::string& name : known) {
      DI_ASSIGN_OR_RETURN(const bool found, PatternFinds(pattern, name));
      if (found) return std::string();
    }
    // A pattern the regex compiler refuses only means such keys are not generated.
    StatusOr<std::string> key =
        Visit(Json{{"type", "string"}, {"pattern", pattern}}, hint + "_pattern_key", depth + 1);
    if (!key.ok()) return std::string();
    DI_ASSIGN_OR_RETURN(std::string v,
                        Visit(patterns.begin().value(), hint + "_pattern_value", depth + 1));
    return Define(hint + "_pattern_pair", *key + " colon " + v);
  }

  // The schema the value of property `name` must meet: `own` (null: none) and the schema of every
  // patternProperties pattern that `name` matches (json_schema_names.h); false when a
  // propertyNames schema rejects the name or a matching pattern's schema is false (the property
  // may not appear). Null when nothing applies.
  static StatusOr<Json> WithPatterns(const Json& s, const std::string& name, const Json& own) {
    if (s.contains("propertyNames")) {
      DI_ASSIGN_OR_RETURN(bool meets, NameMeets(s["propertyNames"], name));
      if (!meets) return Json(false);
    }
    if (!s.contains("patternProperties")) return own;
    const Json& patterns = s["patternProperties"];
    if (!patterns.is_object()) return InvalidArgument("'patternProperties' must be an object");
    Json all = Json::array();
    if (!own.is_null()) all.push_back(own);
    for (auto it = patterns.begin(); it != patterns.end(); ++it) {
      DI_ASSIGN_OR_RETURN(bool found, PatternFinds(it.key(), name));
      if (found) all.push_back(it.value());
    }
    if (all.empty()) return Json();
    if (std::any_of(all.begin(), all.end(), [](const Json& x) { return Never(x); })) {
      return Json(false);  // the property may not appear
    }
    if (all.size() == 1) return all[0];
    return Json{{"allOf", all}};
  }

  // dependentSchemas (or draft 4-7 schema-valued `dependencies`): whether `s` has any.
  static bool HasSchemaDependencies(const Json& s) {
    if (s.contains("dependentSchemas") &&
        !(s["dependentSchemas"].is_object() && s["dependentSchemas"].empty())) {
      return true;
    }
    if (!s.contains("dependencies") || !s["dependencies"].is_object()) return false;
    return std::any_of(s["dependencies"].begin(), s["dependencies"].end(),
                       [](const Json& v) { return !v.is_array(); });
  }

  // `s` with its schema dependencies {p: S, ...} as an anyOf over which of the trigger
  // properties are present: each branch is allOf(s without them, per trigger p either
  // "p absent" (properties {p: false}) or "p present and S" (required [p] and S)). Exact: an
  // object takes the one branch its keys select; other values pass every branch. Up to
  // kMaxDependentSchemas triggers (2^n branches).
  StatusOr<Json> DependentSchemasAsAnyOf(const Json& s) {
    Json rest = s;
    std::vector<std::pair<std::string, Json>> deps;
    if (s.contains("dependentSchemas")) {
      if (!s["dependentSchemas"].is_object()) {
        return InvalidArgument("'dependentSchemas' must be an object");
      }
      for (auto it = s["dependentSchemas"].begin(); it != s["dependentSchemas"].end(); ++it) {
        deps.emplace_back(it.key(), it.value());
      }
      rest.erase("dependentSchemas");
    }
    if (s.contains("dependencies") && s["dependencies"].is_object()) {
      Json names = Json::object();  // the array-valued ones stay (dependentRequired)
      for (auto it = s["dependencies"].begin(); it != s["dependencies"].end(); ++it) {
        if (it.value().is_array()) {
          names[it.key()] = it.value();
        } else {
          deps.emplace_back(it.key(), it.value());
        }
      }
      rest.erase("dependencies");
      if (!names.empty()) rest["dependencies"] = names;
    }
    // A true dependency adds nothing.
    std::erase_if(deps, [](const auto& d) { return d.second == Json(true); });
    // unevaluated* see what the chosen branch's dependency schemas evaluate too: they go beside
    // each branch's allOf, not inside it (an allOf subschema's own see that subschema only).
    Json unevaluated = Json::object();
    for (const char* k : {"unevaluatedProperties", "unevaluatedItems"}) {
      if (!rest.contains(k)) continue;
      unevaluated[k] = rest[k];
      rest.erase(k);
    }
    if (deps.size() > kMaxDependentSchemas) {
      return InvalidArgument("JSON Schema keyword 'dependentSchemas' is supported for up to " +
                             std::to_string(kMaxDependentSchemas) + " trigger properties (" +
                             std::to_string(deps.size()) + " given: one grammar branch per " +
                             "subset of them)");
    }
    // Where the schema itself forbids a trigger, only its "absent" branches exist.
    DI_ASSIGN_OR_RETURN(const Json flat, Flatten(rest, 0));
    auto forbidden = [&](const std::string& name) {
      const Json props = flat.value("properties", Json::object());
      if (props.contains(name)) return Never(props[name]);
      return flat.value("additionalProperties", Json(true)) == Json(false) &&
             !flat.contains("patternProperties");
    };
    Json branches = Json::array();
    for (size_t mask = 0; mask < (size_t{1} << deps.size()); ++mask) {
      Json all = Json::array({rest});
      bool possible = true;
      for (size_t i = 0; i < deps.size(); ++i) {
        const auto& [name, schema] = deps[i];
        if (!(mask >> i & 1)) {
          all.push_back(Json{{"properties", Json{{name, false}}}});
        } else if (schema == Json(false) || forbidden(name)) {
          possible = false;  // present is not allowed: no such branch
        } else {
          all.push_back(Json{{"required", Json::array({name})}});
          all.push_back(schema);
        }
      }
      if (!possible) continue;
      Json branch = unevaluated;
      branch["allOf"] = std::move(all);
      // A branch whose merge keeps out a property it requires (a trigger that the dependency's
      // own additionalProperties: false excludes) matches nothing: left out.
      if (StatusOr<Json> merged = Flatten(branch, 0); merged.ok() && RequiresForbidden(*merged)) {
        continue;
      }
      branches.push_back(std::move(branch));
    }
    if (branches.empty()) {
      return InvalidArgument("dependentSchemas: no combination of the triggers matches anything");
    }
    return Json{{"anyOf", branches}};
  }

  // Whether a flattened schema requires a property its `properties` makes false.
  static bool RequiresForbidden(const Json& flat) {
    if (!flat.contains("required") || !flat["required"].is_array()) return false;
    const Json props = flat.value("properties", Json::object());
    return std::any_of(flat["required"].begin(), flat["required"].end(), [&](const Json& r) {
      return r.is_string() && props.contains(r.get<std::string>()) &&
             Never(props[r.get<std::string>()]);
    });
  }

  // The names each dependentRequired (or draft 4-7 array-valued `dependencies`) trigger needs.
  static StatusOr<std::map<std::string, std::vector<std::string>>> Dependencies(const Json& s) {
    std::map<std::string, std::vector<std::string>> out;
    for (const char* key : {"dependentRequired", "dependencies"}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_object())
        return InvalidArgument(std::string("'") + key + "' must be an object");
      for (auto it = s[key].begin(); it != s[key].end(); ++it) {
        if (!it.value().is_array()) {
          return InvalidArgument(std::string("JSON Schema keyword '") + key +
                                 "' must map names to arrays of names or to schemas");
        }
        for (const Json& name : it.value()) {
          if (!name.is_string())
            return InvalidArgument(std::string("'") + key + "' names must be strings");
          if (name.get<std::string>() != it.key()) out[it.key()].push_back(name.get<std::string>());
        }
      }
    }
    return out;
  }

  // A count keyword (minProperties, minContains, ...): a non-negative integer (2.0 is 2), or
  // `fallback` when `s` has no `key`.
  static StatusOr<int64_t> Count(const Json& s, const char* key, int64_t fallback) {
    if (!s.contains(key)) return fallback;
    const Json& v = s[key];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1e15 ||
        v.get<double>() != static_cast<double>(static_cast<int64_t>(v.get<double>()))) {
      return InvalidArgument(std::string("'") + key + "' must be a non-negative integer");
    }
    return static_cast<int64_t>(v.get<double>());
  }

  // An object with minProperties / maxProperties and/or dependentRequired: the properties in
  // order, the state after each being (c, w): how many were written (c; without a maximum, counts
  // from max(min, 1) on are one state) and which of the properties a dependency names were
  // (w, a bit each). A state is kept only when the rest can complete a valid object: the count
  // within bounds and every written trigger's names written. Additional properties (after the
  // listed ones) only without counts; their keys are never a listed name nor a trigger.
  StatusOr<std::string> CountedObject(const Json& s,
                                      const std::vector<std::pair<std::string, std::string>>& props,
                                      const std::vector<std::string>& prop_names,
                                      const std::vector<bool>& required, const std::string& extra,
                                      const std::map<std::string, std::vector<std::string>>& deps,
                                      const std::string& hint) {
    DI_ASSIGN_OR_RETURN(const int64_t lo, Count(s, "minProperties", 0));
    DI_ASSIGN_OR_RETURN(const int64_t hi, Count(s, "maxProperties", -1));
    if (!extra.empty() && (lo > 0 || hi >= 0)) {
      return InvalidArgument(
          "JSON Schema keyword 'minProperties'/'maxProperties' is not supported together with "
          "additionalProperties or patternProperties: the count of extra properties is unbounded");
    }
    const auto n = static_cast<int64_t>(props.size());
    // The dependency bits: every listed property a dependency names (trigger or needed name).
    std::map<std::string, int> bit;
    const auto index_of = [&](const std::string& name) -> int64_t {
      const auto it = std::find(prop_names.begin(), prop_names.end(), name);
      return it == prop_names.end() ? -1 : it - prop_names.begin();
    };
    std::vector<std::pair<uint32_t, uint32_t>> rules;  // (trigger bit, needed bits)
    for (const auto& [trigger, needed] : deps) {
      if (index_of(trigger) < 0) continue;  // never written (not listed, not an extra key)
      uint32_t need = 0;
      for (const std::string& name : needed) {
        if (index_of(name) < 0) {
          std::string message = "dependentRequired: '";
          message += trigger;
          message += "' needs '";
          message += name;
          message += "', which `properties` does not list (not supported)";
          return InvalidArgument(message);
        }
        if (!bit.count(name)) bit.emplace(name, static_cast<int>(bit.size()));
        need |= 1u << bit[name];
      }
      if (!bit.count(trigger)) bit.emplace(trigger, static_cast<int>(bit.size()));
      if (bit.size() > 10) {
        return InvalidArgument("dependentRequired: more than 10 properties involved");
      }
      rules.emplace_back(1u << bit[trigger], need);
    }
    std::vector<int> bit_of(static_cast<size_t>(n), -1);
    for (const auto& [name, b] : bit) bit_of[static_cast<size_t>(index_of(name))] = b;
    const uint32_t masks = 1u << bit.size();
    const int64_t cap = hi >= 0 ? std::min(hi, n) : std::max<int64_t>(std::min(lo, n + 1), 1);
    const int64_t states = (cap + 1) * static_cast<int64_t>(masks);
    if ((n + 1) * states > 100000) {
      return InvalidArgument("minProperties/maxProperties/dependentRequired: too many states");
    }
    const auto next = [&](int64_t c) { return std::min(c + 1, cap); };
    const auto valid_end = [&](int64_t c, uint32_t w) {
      if (c < lo || (hi >= 0 && c > hi)) return false;
      for (const auto& [trigger, need] : rules) {
        if ((w & trigger) && (w & need) != need) return false;
      }
      return true;
    };
    const auto id = [&](int64_t c, uint32_t w) { return static_cast<size_t>(c * masks + w); };
    const auto with = [&](int64_t i, uint32_t w) {
      return bit_of[static_cast<size_t>(i)] < 0 ? w : w | (1u << bit_of[static_cast<size_t>(i)]);
    };
    // ok[i][state]: properties i.. can complete a valid object from that state.
    std::vector<std::vector<char>> ok(static_cast<size_t>(n + 1),
                                      std::vector<char>(static_cast<size_t>(states), 0));
    for (int64_t c = 0; c <= cap; ++c) {
      for (uint32_t w = 0; w < masks; ++w) ok[n][id(c, w)] = valid_end(c, w);
    }
    const auto can_write = [&](int64_t i, int64_t c, uint32_t w) {
      return (hi < 0 || c < hi) && ok[i + 1][id(next(c), with(i, w))];
    };
    for (int64_t i = n; i-- > 0;) {
      for (int64_t c = 0; c <= cap; ++c) {
        for (uint32_t w = 0; w < masks; ++w) {
          ok[i][id(c, w)] = can_write(i, c, w) || (!required[i] && ok[i + 1][id(c, w)]);
        }
      }
    }
    if (!ok[0][id(0, 0)]) {
      return InvalidArgument(
          "minProperties/maxProperties/dependentRequired cannot be met by the properties the "
          "schema allows: nothing matches");
    }
    // rule[i][state], built from the end; only for feasible states.
    std::vector<std::vector<std::string>> rule(
        static_cast<size_t>(n + 1), std::vector<std::string>(static_cast<size_t>(states)));
    for (int64_t c = 0; c <= cap; ++c) {
      std::string tail = "\"\"";
      if (!extra.empty() && c > 0) {
        tail = "(comma ";
        tail += extra;
        tail += ")*";
      } else if (!extra.empty()) {
        tail = "(";
        tail += extra;
        tail += " (comma ";
        tail += extra;
        tail += ")*)?";
      }
      for (uint32_t w = 0; w < masks; ++w) rule[n][id(c, w)] = tail;
    }
    for (int64_t i = n; i-- > 0;) {
      for (int64_t c = 0; c <= cap; ++c) {
        for (uint32_t w = 0; w < masks; ++w) {
          if (!ok[i][id(c, w)]) continue;
          std::string body;
          if (can_write(i, c, w)) {
            body = (c > 0 ? "comma " : "") + props[i].first + " colon " + props[i].second + " " +
                   rule[i + 1][id(next(c), with(i, w))];
          }
          if (!required[i] && ok[i + 1][id(c, w)]) {
            body += (body.empty() ? "" : " | ") + rule[i + 1][id(c, w)];
          }
          rule[i][id(c, w)] = Define(
              hint + "_p" + std::to_string(i) + "_" + std::to_string(c) + "_" + std::to_string(w),
              body);
        }
      }
    }
    return "\"{\" " + rule[0][id(0, 0)] + " \"}\"";
  }

  // An array under `contains` C (minContains m, default 1; maxContains M, default unbounded):
  // elements follow `items` I, and from m to M of them match C. Exact: "[" (X ",")* Y
  // (("," X)* "," Y){m-1} ("," X)* "]" with Y = I and C, X = I (any element may match C too);
  // with M, X is I and not C instead (`not` as Not builds it) and the Y count is at most M.
  // Together with prefixItems, or with item counts other than a minItems of at most m, it is
  // refused.
  StatusOr<std::string> ContainsArray(const Json& s, const std::string& hint, int depth) {
    DI_ASSIGN_OR_RETURN(const int64_t m, Count(s, "minContains", 1));
    DI_ASSIGN_OR_RETURN(const int64_t max_read, Count(s, "maxContains", -1));
    std::optional<int64_t> max_c;
    if (max_read >= 0) max_c = max_read;
    if (m > 10000 || max_read > 10000) {
      return InvalidArgument("minContains/maxContains above 10000 are not supported");
    }
    const Json items = s.value("items", Json(true));
    if (s.contains("prefixItems") || items.is_array() || s.contains("maxItems") ||
        s.value("minItems", 0) > m) {
      return InvalidArgument(
          "JSON Schema keyword 'contains' is supported with items, minContains, maxContains and "
          "a minItems of at most minContains only (not with prefixItems or maxItems)");
    }
    if (max_c && m > *max_c) return InvalidArgument("contains: minContains above maxContains");
    const Json& c = s["contains"];
    std::string x, y;
    if (Never(items)) {
      if (m > 0) return InvalidArgument("contains: items false leaves no element to match");
      return std::string(R"("[" "]")");
    }
    DI_ASSIGN_OR_RETURN(std::string any, Visit(items, hint + "_item", depth + 1));
    if (max_c) {
      if (Always(c)) {
        x.clear();  // every element matches: at most M elements, from m on
      } else if (Never(c)) {
        x = any;
      } else {
        DI_ASSIGN_OR_RETURN(x, Visit(Json{{"allOf", Json::array({items, {{"not", c}}})}},
                                     hint + "_other", depth + 1));
      }
    } else {
      x = any;
    }
    if (Never(c)) {
      if (m > 0) return InvalidArgument("contains: false matches no element");
    } else if (Always(c)) {
      y = any;
    } else if (m > 0 || max_c) {
      DI_ASSIGN_OR_RETURN(
          y, Visit(Json{{"allOf", Json::array({items, c})}}, hint + "_match", depth + 1));
    }
    const std::string hi = max_c ? std::to_string(*max_c - 1) : "";
    std::string alts;
    if (!y.empty() && (!max_c || *max_c > 0)) {
      // At least max(m, 1) matching elements (and at most M).
      const std::string xs = x.empty() ? "\"\"" : "(comma " + x + ")*";
      const std::string lead = x.empty() ? "" : "(" + x + " comma)* ";
      const int64_t lo = std::max<int64_t>(m, 1) - 1;
      alts = lead + y + " " + xs;
      if (!max_c || *max_c > 1) {
        const std::string more = Define(hint + "_more", "comma " + y + " " + xs);
        alts += " " + more + "{" + std::to_string(lo) + "," + hi + "}";
      }
    }
    if (m == 0) {  // no matching element at all
      const std::string none = x.empty() ? "\"\"" : "(" + x + " (comma " + x + ")*)?";
      alts += (alts.empty() ? "" : " | ") + none;
    }
    return "\"[\" " + Define(hint + "_contains", alts) + " \"]\"";
  }

  // uniqueItems over a finite element domain (json_schema_unique.h): rule u<mask> writes the
  // rest of an array whose written values are `mask`; each alternative writes one more value.
  StatusOr<std::string> UniqueArray(const Json& s, const std::string& hint, int depth) {
    const char* why =
        "JSON Schema keyword 'uniqueItems' is supported over items with a small finite set of "
        "values (enum, const, boolean, null, an integer range of at most 64), without "
        "prefixItems or contains";
    if (s.contains("prefixItems") || s.contains("contains") || !s.contains("items") ||
        s["items"].is_array()) {
      return InvalidArgument(why);
    }
    DI_ASSIGN_OR_RETURN(Json items, Flatten(s["items"], depth + 1));
    const std::optional<std::vector<Json>> values = FiniteValues(items);
    if (!values) return InvalidArgument(why);
    const auto n = static_cast<int64_t>(values->size());
    const int64_t max_items =
        std::min(n, s.contains("maxItems") ? s["maxItems"].get<int64_t>() : n);
    const int64_t min_items = s.value("minItems", int64_t{0});
    if (min_items > max_items) {
      return InvalidArgument("minItems above maxItems (or above the " + std::to_string(n) +
                             " distinct values uniqueItems allows)");
    }
    if (SubsetsUpTo(n, max_items) > kMaxUniqueStates) {
      return InvalidArgument("uniqueItems over " + std::to_string(n) + " values up to " +
                             std::to_string(max_items) + " items needs more than " +
                             std::to_string(kMaxUniqueStates) + " grammar states");
    }
    std::vector<std::string> literals;
    for (const Json& v : *values) {
      DI_ASSIGN_OR_RETURN(std::string spellings, ValueSpellings(v, hint + "_u"));
      literals.push_back(std::move(spellings));
    }
    std::map<uint64_t, std::string> rules;  // mask -> rule
    // Written values are a bitmask over at most 64 values.
    std::function<std::string(uint64_t, int64_t)> rest = [&](uint64_t mask, int64_t written) {
      if (const auto it = rules.find(mask); it != rules.end()) return it->second;
      std::string body;
      if (written < max_items) {
        for (int64_t i = 0; i < n; ++i) {
          const uint64_t bit = uint64_t{1} << i;
          if ((mask & bit) != 0) continue;
          body += body.empty() ? "" : " | ";
          body += (written > 0 ? "comma " : "") + literals[static_cast<size_t>(i)] + " " +
                  rest(mask | bit, written + 1);
        }
      }
      if (written >= min_items) body += body.empty() ? "\"\"" : " | \"\"";
      return rules[mask] = Define(hint + "_u", body);
    };
    return "\"[\" " + rest(0, 0) + " \"]\"";
  }

  StatusOr<std::string> Array(const Json& s, const std::string& hint, int depth) {
    if (s.contains("uniqueItems") && !Trivial("uniqueItems", s)) {
      if (s["uniqueItems"] != Json(true)) return InvalidArgument("'uniqueItems' must be a boolean");
      return UniqueArray(s, hint, depth);
    }
    if (s.contains("contains") &&
        !(s.contains("minContains") && s["minContains"] == Json(0) && !s.contains("maxContains"))) {
      return ContainsArray(s, hint, depth);
    }
    std::vector<std::string> prefix;
    int64_t prefix_cut = -1;  // the index of a prefixItems entry that matches nothing
    const Json* prefix_json = s.contains("prefixItems") ? &s["prefixItems"] : nullptr;
    const Json* items = s.contains("items") ? &s["items"] : nullptr;
    if (items && items->is_array()) {
      // Draft 4-7 tuples: items is the prefix, additionalItems the rest.
      prefix_json = items;
      items = s.contains("additionalItems") ? &s["additionalItems"] : nullptr;
    }
    if (prefix_json) {
      if (!prefix_json->is_array()) return InvalidArgument("'prefixItems' must be an array");
      for (size_t i = 0; i < prefix_json->size(); ++i) {
        if (Never((*prefix_json)[i])) {  // no element i: the array ends before it
          prefix_cut = static_cast<int64_t>(i);
          break;
        }
        DI_ASSIGN_OR_RETURN(std::string e,
                            Visit((*prefix_json)[i], hint + "_" + std::to_string(i), depth + 1));
        prefix.push_back(e);
      }
    }
    const int64_t k = static_cast<int64_t>(prefix.size());
    int64_t max_items = s.contains("maxItems") ? s["maxItems"].get<int64_t>() : -1;
    if (prefix_cut >= 0) max_items = max_items < 0 ? prefix_cut : std::min(max_items, prefix_cut);
    const int64_t min_items = s.value("minItems", 0);
    std::string tail = "json_value";
    if (items && Never(*items)) {
      max_items = max_items < 0 ? k : std::min(max_items, k);
    } else if (items) {
      DI_ASSIGN_OR_RETURN(tail, Visit(*items, hint + "_item", depth + 1));
    }
    if (max_items >= 0 && min_items > max_items) {
      return InvalidArgument("minItems above maxItems (or above the prefixItems allowed)");
    }
    if (min_items > 10000 || max_items > 10000) return InvalidArgument("item counts above 10000");
    const int64_t explicit_n =
        max_items < 0 ? std::max(k, min_items) : std::min(std::max(k, min_items), max_items);
    // rest[i]: the elements from index i on.
    std::string rest;
    if (max_items >= 0 && explicit_n == max_items) {
      rest = "\"\"";
    } else {
      const std::string rep =
          max_items < 0 ? "*"
                        : "{0," + std::to_string(max_items - explicit_n - (explicit_n == 0)) + "}";
      rest = explicit_n == 0 ? "(" + tail + " (comma " + tail + ")" + rep + ")?"
                             : "(comma " + tail + ")" + rep;
    }
    for (int64_t i = explicit_n; i-- > 0;) {
      const std::string elem = i < k ? prefix[i] : tail;
      std::string body = i > 0 ? "comma " : "";
      body += elem;
      body += " ";
      body += rest;
      if (i >= min_items) body += " | \"\"";
      rest = Define(hint + "_i" + std::to_string(i), body);
    }
    return "\"[\" " + rest + " \"]\"";
  }

  // A JSON value as an EBNF literal (excluded characters \u-escaped: all non-ASCII then is).
  std::string Literal(const Json& v) const {
    return EbnfQuote(v.dump(-1, ' ', /*ensure_ascii=*/!options_.string_excluded.empty()));
  }

  // The texts of the values equal to `v` (const, enum, a finite uniqueItems domain). Strict: its
  // own text (one spelling, what typed consumers parse). Not strict, as JSON Schema compares
  // values: a number in any spelling without an exponent that has its value (1, 1.0 and 1.00
  // for 1 or 1.0; 1.5 and 1.50 for 1.5), an object's keys in any order (up to kMaxAnyOrderKeys
  // keys, one rule per set of keys written; a larger object keeps its written order), arrays and
  // objects element by element; strings, booleans and null as written.
  StatusOr<std::string> ValueSpellings(const Json& v, const std::string& hint) {
    if (options_.strict) return Literal(v);
    if (v.is_number()) return NumberSpellings(v);
    if (v.is_array()) {
      if (v.empty()) return std::string("\"[\" \"]\"");
      std::string body = "\"[\"";
      for (size_t i = 0; i < v.size(); ++i) {
        DI_ASSIGN_OR_RETURN(std::string e, ValueSpellings(v[i], hint + "_" + std::to_string(i)));
        body += (i == 0 ? " " : " comma ") + e;
      }
      return Define(hint, body + " \"]\"");
    }
    if (!v.is_object()) return Literal(v);
    if (v.empty()) return std::string("\"{\" \"}\"");
    std::vector<std::pair<std::string, std::string>> pairs;
    for (auto it = v.begin(); it != v.end(); ++it) {
      DI_ASSIGN_OR_RETURN(std::string e,
                          ValueSpellings(it.value(), hint + "_" + std::to_string(pairs.size())));
      pairs.emplace_back(Literal(Json(it.key())), std::move(e));
    }
    const size_t n = pairs.size();
    if (n > kMaxAnyOrderKeys) {
      std::string body = "\"{\"";
      for (size_t i = 0; i < n; ++i) {
        body += (i == 0 ? " " : " comma ") + pairs[i].first + " colon " + pairs[i].second;
      }
      return Define(hint, body + " \"}\"");
    }
    // Every key once, in any order.
    return AnyOrderObject(pairs, std::vector<bool>(n, true), "", {}, 0, -1, hint);
  }

  // Not strict: integers written as JSON Schema counts them, a fraction of zeros (1.0) too.
  // Strict: without a fraction (Go's and serde's integer fields refuse 1.0).
  std::string WithZeroFraction(const std::string& integers) const {
    if (options_.strict) return integers;
    return "(" + integers + ") (\".\" \"0\"+)?";
  }

  // A number's spellings without an exponent: an integral value up to 2^53 as its integer digits
  // with an optional fraction of zeros; any other value as written, with trailing zeros after a
  // fraction (a value written with an exponent: as written only).
  static std::string NumberSpellings(const Json& v) {
    const std::optional<int64_t> whole = WholeDouble(v);
    if (v.is_number_integer() || whole) {
      const std::string digits = whole ? std::to_string(*whole) : v.dump();
      return "(" + EbnfQuote(digits) + " (\".\" \"0\"+)?)";
    }
    const std::string text = v.dump();
    if (text.find_first_of("eE") != std::string::npos) return EbnfQuote(text);
    return "(" + EbnfQuote(text) + " \"0\"*)";
  }

  Json doc_;  // the schema document with every $ref absolute (schema_resources.h)
  SchemaResources resources_;
  const JsonSchemaOptions& options_;
  std::string prefix_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> ref_rules_;
  std::map<std::string, std::string> length_rules_;    // "lo,hi" -> the bounded string's rule
  std::map<std::string, std::string> multiple_rules_;  // "pe-d" -> the multiples of p / 10^d
  int n_rules_ = 0;
  int n_combinations_ = 0;  // AnyOfCombinations, over the whole schema
};

}  // namespace

StatusOr<std::string> JsonSchemaToEbnf(std::string_view schema, const JsonSchemaOptions& options) {
  Json root;
  try {
    root = Json::parse(schema);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("JSON Schema is not valid JSON: ") + e.what());
  }
  DI_ASSIGN_OR_RETURN(SchemaRules r, JsonSchemaRules(root, {Json::json_pointer()}, "", options));
  return "root ::= " + r.roots[0] + "\n" + r.rules + JsonBaseRules(options);
}

StatusOr<SchemaRules> JsonSchemaRules(const Json& document,
                                      const std::vector<Json::json_pointer>& schemas,
                                      const std::string& prefix, const JsonSchemaOptions& options) {
  try {
    Converter c(document, options, prefix);
    SchemaRules out;
    for (const auto& p : schemas) {
      DI_ASSIGN_OR_RETURN(std::string e, c.Convert(p, "root_value"));
      out.roots.push_back(std::move(e));
    }
    out.rules = c.Rules();
    return out;
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("malformed JSON Schema: ") + e.what());
  }
}

std::string JsonBaseRules(const JsonSchemaOptions& options) {
  return BaseRules(StringChars(options.string_excluded));
}

std::string JsonObjectEbnf() { return "root ::= json_object\n" + JsonBaseRules({}); }

}  // namespace deepinfer::structured
