// A small XML element tree with a strict reader and a deterministic writer: enough for topology
// files (elements, attributes, comments, the <?xml?> declaration, the five standard entities).
// Text content is ignored. Errors name the line and column.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace atl::topo {

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;  // in document order
  std::vector<XmlElement> children;

  /// Attribute value or nullptr.
  const std::string* attr(const std::string& key) const;
  void set(const std::string& key, std::string value);
  bool operator==(const XmlElement&) const = default;
};

/// Parses a document with exactly one root element; ncclInvalidArgument with "line L col C: why".
Result<XmlElement> parseXml(const std::string& text);
/// Two-space indented, attributes in stored order, entities escaped.
std::string writeXml(const XmlElement& root);

}  // namespace atl::topo
