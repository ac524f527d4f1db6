#include "topology/xml.h"

#include <cctype>

namespace atl::topo {

const std::string* XmlElement::attr(const std::string& key) const {
  for (const auto& [k, v] : attrs)
    if (k == key) return &v;
  return nullptr;
}

void XmlElement::set(const std::string& key, std::string value) {
  for (auto& [k, v] : attrs)
    if (k == key) {
      v = std::move(value);
      return;
    }
  attrs.emplace_back(key, std::move(value));
}

namespace {

// Nesting bound: topology trees are a handful deep; this keeps hostile input from overflowing the stack.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  Result<XmlElement> document() {
    skipMisc();
    if (!error_.empty()) return fail();
    if (eof() || s_[pos_] != '<') return fail("expected a root element");
    XmlElement root;
    if (!element(&root, 0)) return fail();
    skipMisc();
    if (!error_.empty()) return fail();
    if (!eof()) return fail("content after the root element");
    return root;
  }

 private:
  bool eof() const { return pos_ >= s_.size(); }
  bool startsWith(const char* p) const { return s_.compare(pos_, std::char_traits<char>::length(p), p) == 0; }
  void skipSpace() {
    while (!eof() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool setError(const std::string& why) {
    if (error_.empty()) {
      errPos_ = pos_;
      error_ = why;
    }
    return false;
  }
  Status fail(const std::string& why = "") {
    if (!why.empty()) setError(why);
    int line = 1, col = 1;
    for (size_t i = 0; i < errPos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return ATOLL_ERROR(ncclInvalidArgument, "XML line %d col %d: %s", line, col, error_.c_str());
  }

  // Whitespace, comments and processing instructions between elements.
  void skipMisc() {
    for (;;) {
      skipSpace();
      if (startsWith("<!--")) {
        const size_t end = s_.find("-->", pos_ + 4);
        if (end == std::string::npos) {
          setError("unterminated comment");
          return;
        }
        pos_ = end + 3;
      } else if (startsWith("<?")) {
        const size_t end = s_.find("?>", pos_ + 2);
        if (end == std::string::npos) {
          setError("unterminated <? ?>");
          return;
        }
        pos_ = end + 2;
      } else {
        return;
      }
    }
  }

  static bool nameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
  }
  bool name(std::string* out) {
    const size_t start = pos_;
    while (!eof() && nameChar(s_[pos_])) ++pos_;
    if (pos_ == start) return setError("expected a name");
    out->assign(s_, start, pos_ - start);
    return true;
  }

  bool unescape(const std::string& raw, std::string* out) {
    out->clear();
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '&') {
        if (raw[i] == '<') return setError("'<' inside an attribute value");
        *out += raw[i];
        continue;
      }
      const size_t semi = raw.find(';', i);
      if (semi == std::string::npos) return setError("unterminated entity");
      const std::string ent = raw.substr(i + 1, semi - i - 1);
      if (ent == "amp")
        *out += '&';
      else if (ent == "lt")
        *out += '<';
      else if (ent == "gt")
        *out += '>';
      else if (ent == "quot")
        *out += '"';
      else if (ent == "apos")
        *out += '\'';
      else
        return setError("unknown entity &" + ent + ";");
      i = semi;
    }
    return true;
  }

  bool element(XmlElement* e, int depth) {
    if (depth > kMaxDepth) return setError("elements nested too deep");
    ++pos_;  // '<'
    if (!name(&e->name)) return false;
    for (;;) {
      const size_t before = pos_;
      skipSpace();
      if (eof()) return setError("unterminated tag <" + e->name + ">");
      if (startsWith("/>")) {
        pos_ += 2;
        return true;
      }
      if (s_[pos_] == '>') {
        ++pos_;
        break;
      }
      if (pos_ == before) return setError("expected whitespace before an attribute");
      std::string key, value;
      if (!name(&key)) return false;
      skipSpace();
      if (eof() || s_[pos_] != '=') return setError("expected '=' after attribute " + key);
      ++pos_;
      skipSpace();
      if (eof() || (s_[pos_] != '"' && s_[pos_] != '\'')) return setError("expected a quoted value for " + key);
      const char quote = s_[pos_++];
      const size_t end = s_.find(quote, pos_);
      if (end == std::string::npos) return setError("unterminated value of " + key);
      if (!unescape(s_.substr(pos_, end - pos_), &value)) return false;
      pos_ = end + 1;
      if (e->attr(key)) return setError("duplicate attribute " + key);
      e->attrs.emplace_back(std::move(key), std::move(value));
    }
    // Content: children, comments, ignored text, then the matching end tag.
    for (;;) {
      while (!eof() && s_[pos_] != '<') ++pos_;
      if (eof()) return setError("missing </" + e->name + ">");
      if (startsWith("<!--") || startsWith("<?")) {
        skipMisc();
        if (!error_.empty()) return false;
        continue;
      }
      if (startsWith("</")) {
        pos_ += 2;
        std::string closing;
        if (!name(&closing)) return false;
        if (closing != e->name) return setError("</" + closing + "> closes <" + e->name + ">");
        skipSpace();
        if (eof() || s_[pos_] != '>') return setError("expected '>' after </" + closing);
        ++pos_;
        return true;
      }
      if (startsWith("<!")) return setError("DOCTYPE/CDATA not supported");
      e->children.emplace_back();
      if (!element(&e->children.back(), depth + 1)) return false;
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
  size_t errPos_ = 0;
  std::string error_;
};

void escape(const std::string& in, std::string* out) {
  for (char c : in) {
    switch (c) {
      case '&':
        *out += "&amp;";
        break;
      case '<':
        *out += "&lt;";
        break;
      case '>':
        *out += "&gt;";
        break;
      case '"':
        *out += "&quot;";
        break;
      default:
        *out += c;
    }
  }
}

void write(const XmlElement& e, int depth, std::string* out) {
  out->append(static_cast<size_t>(depth) * 2, ' ');
  *out += '<' + e.name;
  for (const auto& [k, v] : e.attrs) {
    *out += ' ' + k + "=\"";
    escape(v, out);
    *out += '"';
  }
  if (e.children.empty()) {
    *out += "/>\n";
    return;
  }
  *out += ">\n";
  for (const XmlElement& c : e.children) write(c, depth + 1, out);
  out->append(static_cast<size_t>(depth) * 2, ' ');
  *out += "</" + e.name + ">\n";
}

}  // namespace

Result<XmlElement> parseXml(const std::string& text) { return Parser(text).document(); }

std::string writeXml(const XmlElement& root) {
  std::string out;
  write(root, 0, &out);
  return out;
}

}  // namespace atl::topo
