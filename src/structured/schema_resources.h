// The schema resources of one JSON Schema document, for `$ref`: every subschema's base URI (from
// the `$id`s above it, RFC 3986 reference resolution), the resources by their URI, and the
// `$anchor`s (also draft 4-7's `"$id": "#name"`). A reference resolves against the base URI of
// the schema it appears in; its fragment is an anchor or a percent-encoded JSON pointer (RFC
// 6901 section 6) into the resource. Only resources inside the document resolve: anything else
// (a remote schema, the meta-schema) is an error naming the reference.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/status.h"
#include "structured/json_schema_keywords.h"

namespace deepinfer::structured {

class SchemaResources {
 public:
  // `root` outlives this object.
  explicit SchemaResources(const Json& root);

  // The base URI inside `node`, an object of the document (nullopt for any other object, e.g. a
  // merged copy).
  std::optional<std::string> BaseOf(const Json* node) const;
  // The subschema `ref` names from a schema whose base URI is `base`, with the reference's
  // absolute form (resource URI + "#" + fragment; the same target always gets the same form).
  StatusOr<std::pair<const Json*, std::string>> Resolve(const std::string& ref,
                                                        const std::string& base) const;
  // A copy of the document with every `$ref` made absolute (resolved against the base URI of the
  // schema it is in), so that it resolves against base "" wherever a merge or copy moves it.
  static Json Absolutized(const Json& root);

 private:
  void Index(const Json& node, const std::string& base);
  Json Absolutize(const Json& node) const;

  std::map<const Json*, std::string> base_of_;
  std::map<std::string, const Json*> resources_;  // URI without fragment -> resource root
  std::map<std::string, const Json*> anchors_;    // URI + "#" + anchor -> subschema
};

// RFC 3986 section 5.2: `ref` resolved against `base` (both without normalization of dot
// segments beyond the merge). Exposed for tests.
std::string ResolveUri(const std::string& base, const std::string& ref);

}  // namespace deepinfer::structured
