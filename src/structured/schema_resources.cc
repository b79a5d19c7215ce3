#include "structured/schema_resources.h"

#include <cctype>

namespace deepinfer::structured {
namespace {

// The part of `uri` before '#', and the fragment after it (empty when none).
std::pair<std::string, std::string> SplitFragment(const std::string& uri) {
  const size_t hash = uri.find('#');
  if (hash == std::string::npos) return {uri, ""};
  return {uri.substr(0, hash), uri.substr(hash + 1)};
}

bool HasScheme(const std::string& uri) {
  const size_t colon = uri.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i) {
    const auto c = static_cast<unsigned char>(uri[i]);
    if (!std::isalnum(c) && c != '+' && c != '-' && c != '.') return false;
  }
  return std::isalpha(static_cast<unsigned char>(uri[0])) != 0;
}

std::string PercentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Keywords whose values are data, not schemas.
bool DataKeyword(const std::string& key) {
  return key == "enum" || key == "const" || key == "examples" || key == "default";
}

}  // namespace

std::string ResolveUri(const std::string& base, const std::string& ref) {
  if (ref.empty()) return SplitFragment(base).first;
  if (ref[0] == '#') return SplitFragment(base).first + ref;
  if (HasScheme(ref)) return ref;
  const std::string doc = SplitFragment(base).first;
  if (ref.rfind("//", 0) == 0) {
    const size_t colon = doc.find(':');
    return (colon == std::string::npos ? "" : doc.substr(0, colon + 1)) + ref;
  }
  if (ref[0] == '/') {
    // Keep scheme and authority: "scheme://host" or "scheme:".
    const size_t colon = doc.find(':');
    if (colon == std::string::npos) return ref;
    if (doc.compare(colon + 1, 2, "//") == 0) {
      const size_t path = doc.find('/', colon + 3);
      return doc.substr(0, path == std::string::npos ? doc.size() : path) + ref;
    }
    return doc.substr(0, colon + 1) + ref;
  }
  // A relative path: replace the last segment of the base path.
  const size_t slash = doc.rfind('/');
  const size_t colon = doc.find(':');
  if (slash == std::string::npos || (colon != std::string::npos && slash < colon)) {
    return (colon == std::string::npos ? "" : doc.substr(0, colon + 1)) + ref;
  }
  return doc.substr(0, slash + 1) + ref;
}

SchemaResources::SchemaResources(const Json& root) {
  resources_[""] = &root;
  Index(root, "");
}

void SchemaResources::Index(const Json& node, const std::string& base) {
  if (node.is_array()) {
    for (const Json& child : node) Index(child, base);
    return;
  }
  if (!node.is_object()) return;
  std::string here = base;
  if (const auto id = node.find("$id"); id != node.end() && id->is_string()) {
    const std::string& text = id->get_ref<const std::string&>();
    if (!text.empty() && text[0] == '#') {
      anchors_[SplitFragment(base).first + text] = &node;  // draft 4-7 location-independent id
    } else {
      here = SplitFragment(ResolveUri(base, text)).first;
      resources_[here] = &node;
    }
  }
  if (const auto anchor = node.find("$anchor"); anchor != node.end() && anchor->is_string()) {
    anchors_[here + "#" + anchor->get<std::string>()] = &node;
  }
  base_of_[&node] = here;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!DataKeyword(it.key())) Index(it.value(), here);
  }
}

Json SchemaResources::Absolutized(const Json& root) {
  return SchemaResources(root).Absolutize(root);
}

Json SchemaResources::Absolutize(const Json& node) const {
  if (node.is_array()) {
    Json out = Json::array();
    for (const Json& child : node) out.push_back(Absolutize(child));
    return out;
  }
  if (!node.is_object()) return node;
  const std::string base = BaseOf(&node).value_or("");
  Json out = Json::object();
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (it.key() == "$ref" && it.value().is_string()) {
      out["$ref"] = ResolveUri(base, it.value().get<std::string>());
    } else if (DataKeyword(it.key())) {
      out[it.key()] = it.value();
    } else {
      out[it.key()] = Absolutize(it.value());
    }
  }
  return out;
}

std::optional<std::string> SchemaResources::BaseOf(const Json* node) const {
  const auto it = base_of_.find(node);
  if (it == base_of_.end()) return std::nullopt;
  return it->second;
}

StatusOr<std::pair<const Json*, std::string>> SchemaResources::Resolve(
    const std::string& ref, const std::string& base) const {
  const std::string absolute = ResolveUri(base, ref);
  const auto [doc, fragment] = SplitFragment(absolute);
  const auto resource = resources_.find(doc);
  if (resource == resources_.end()) {
    return InvalidArgument("$ref '" + ref +
                           "': only references inside the schema resolve (no remote schemas)");
  }
  if (fragment.empty()) return std::make_pair(resource->second, doc + "#");
  if (fragment[0] != '/') {
    const auto anchor = anchors_.find(doc + "#" + fragment);
    if (anchor == anchors_.end()) return InvalidArgument("$ref '" + ref + "' does not resolve");
    return std::make_pair(anchor->second, doc + "#" + fragment);
  }
  try {
    const Json& target = resource->second->at(Json::json_pointer(PercentDecode(fragment)));
    return std::make_pair(&target, doc + "#" + PercentDecode(fragment));
  } catch (const std::exception&) {
    return InvalidArgument("$ref '" + ref + "' does not resolve");
  }
}

}  // namespace deepinfer::structured
