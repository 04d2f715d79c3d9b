//===- Json.cpp - a small JSON reader that remembers where things are -----===//

#include "tbc/Support/Json.h"
#include "tbc/Support/FileIO.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tbc::json;

const Value *Value::get(std::string_view key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  for (const auto &[k, v] : members_)
    if (k == key)
      return &v;
  return nullptr;
}

const char *Value::kindName(Kind k) {
  switch (k) {
  case Kind::Null: return "null";
  case Kind::Bool: return "a boolean";
  case Kind::Number: return "a number";
  case Kind::String: return "a string";
  case Kind::Array: return "an array";
  case Kind::Object: return "an object";
  }
  return "?";
}

namespace tbc::json {
class Parser {
public:
  Parser(std::string_view text, ParseError &error, const Limits &limits)
      : s(text), err(error), limits(limits) {}

  std::optional<Value> document() {
    if (s.size() > limits.maxBytes)
      return fail("document of " + std::to_string(s.size()) +
                  " bytes exceeds the reader's limit of " +
                  std::to_string(limits.maxBytes) + " bytes");
    Value v;
    skipSpace();
    if (!value(v, 0))
      return std::nullopt;
    skipSpace();
    if (i != s.size())
      return fail("unexpected text after the JSON value");
    return v;
  }

private:
  static constexpr int kMaxDepth = 256;
  std::string_view s;
  ParseError &err;
  const Limits &limits;
  size_t values = 0;
  size_t i = 0;
  int line = 1;
  size_t lineStart = 0;

  Pos here() const { return {line, int(i - lineStart) + 1}; }

  std::nullopt_t fail(const std::string &msg) {
    if (err.message.empty())
      err = {here(), msg};
    return std::nullopt;
  }
  bool failB(const std::string &msg) {
    fail(msg);
    return false;
  }

  void skipSpace() {
    while (i < s.size()) {
      char c = s[i];
      if (c == '\n') {
        ++i;
        ++line;
        lineStart = i;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++i;
      } else {
        break;
      }
    }
  }

  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (s.substr(i, n) != word)
      return failB("invalid literal");
    i += n;
    return true;
  }

  bool value(Value &v, int depth) {
    if (depth > kMaxDepth)
      return failB("JSON nested deeper than 256 levels");
    if (++values > limits.maxValues)
      return failB("document holds more than " +
                   std::to_string(limits.maxValues) +
                   " values, the reader's limit");
    v.pos_ = here();
    if (i >= s.size())
      return failB("unexpected end of input, expected a value");
    char c = s[i];
    switch (c) {
    case '{': return object(v, depth);
    case '[': return array(v, depth);
    case '"':
      v.kind_ = Value::Kind::String;
      return string(v.string_);
    case 't':
      v.kind_ = Value::Kind::Bool;
      v.bool_ = true;
      return literal("true");
    case 'f':
      v.kind_ = Value::Kind::Bool;
      return literal("false");
    case 'n':
      v.kind_ = Value::Kind::Null;
      return literal("null");
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return number(v);
      return failB(std::string("unexpected character '") + c + "'");
    }
  }

  bool object(Value &v, int depth) {
    v.kind_ = Value::Kind::Object;
    ++i; // '{'
    skipSpace();
    if (i < s.size() && s[i] == '}') {
      ++i;
      return true;
    }
    while (true) {
      skipSpace();
      if (i >= s.size() || s[i] != '"')
        return failB("expected a string key");
      Pos keyPos = here();
      std::string key;
      if (!string(key))
        return false;
      if (v.get(key)) {
        err = {keyPos, "duplicate key '" + key + "'"};
        return false;
      }
      skipSpace();
      if (i >= s.size() || s[i] != ':')
        return failB("expected ':' after key '" + key + "'");
      ++i;
      skipSpace();
      Value member;
      if (!value(member, depth + 1))
        return false;
      v.members_.emplace_back(std::move(key), std::move(member));
      skipSpace();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == '}') {
        ++i;
        return true;
      }
      return failB("expected ',' or '}' in object");
    }
  }

  bool array(Value &v, int depth) {
    v.kind_ = Value::Kind::Array;
    ++i; // '['
    skipSpace();
    if (i < s.size() && s[i] == ']') {
      ++i;
      return true;
    }
    while (true) {
      skipSpace();
      Value element;
      if (!value(element, depth + 1))
        return false;
      v.elements_.push_back(std::move(element));
      skipSpace();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == ']') {
        ++i;
        return true;
      }
      return failB("expected ',' or ']' in array");
    }
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(uint32_t &out) {
    if (i + 4 > s.size())
      return failB("truncated \\u escape");
    out = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s[i++];
      out <<= 4;
      if (c >= '0' && c <= '9') out |= c - '0';
      else if (c >= 'a' && c <= 'f') out |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') out |= c - 'A' + 10;
      else return failB("invalid hex digit in \\u escape");
    }
    return true;
  }

  /// Validates one UTF-8 sequence starting at s[i] and copies it.
  bool utf8(std::string &out) {
    unsigned char c = s[i];
    int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
    if (n < 0 || c > 0xF4 || i + n >= s.size())
      return failB("invalid UTF-8 in string");
    uint32_t cp = c & (0x3F >> n);
    for (int k = 1; k <= n; ++k) {
      unsigned char cc = s[i + k];
      if ((cc & 0xC0) != 0x80)
        return failB("invalid UTF-8 in string");
      cp = (cp << 6) | (cc & 0x3F);
    }
    static const uint32_t minCp[] = {0, 0x80, 0x800, 0x10000};
    if (cp < minCp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return failB("invalid UTF-8 in string");
    out.append(s.data() + i, n + 1);
    i += n + 1;
    return true;
  }

  bool string(std::string &out) {
    ++i; // opening quote
    while (true) {
      if (i >= s.size())
        return failB("unterminated string");
      unsigned char c = s[i];
      if (c == '"') {
        ++i;
        return true;
      }
      if (c < 0x20)
        return failB("control character in string");
      if (c >= 0x80) {
        if (!utf8(out))
          return false;
        continue;
      }
      if (c != '\\') {
        out += char(c);
        ++i;
        continue;
      }
      if (++i >= s.size())
        return failB("unterminated string");
      char e = s[i++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (s.substr(i, 2) != "\\u")
            return failB("unpaired surrogate in \\u escape");
          i += 2;
          if (!hex4(lo))
            return false;
          if (lo < 0xDC00 || lo > 0xDFFF)
            return failB("unpaired surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return failB("unpaired surrogate in \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return failB(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  bool number(Value &v) {
    v.kind_ = Value::Kind::Number;
    size_t start = i;
    bool integral = true;
    if (s[i] == '-')
      ++i;
    if (i >= s.size() || !isdigit((unsigned char)s[i]))
      return failB("invalid number");
    if (s[i] == '0') {
      ++i;
    } else {
      while (i < s.size() && isdigit((unsigned char)s[i]))
        ++i;
    }
    if (i < s.size() && s[i] == '.') {
      integral = false;
      ++i;
      if (i >= s.size() || !isdigit((unsigned char)s[i]))
        return failB("invalid number: digits expected after '.'");
      while (i < s.size() && isdigit((unsigned char)s[i]))
        ++i;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      integral = false;
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-'))
        ++i;
      if (i >= s.size() || !isdigit((unsigned char)s[i]))
        return failB("invalid number: digits expected in exponent");
      while (i < s.size() && isdigit((unsigned char)s[i]))
        ++i;
    }
    std::string text(s.substr(start, i - start));
    v.number_ = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(v.number_))
      return failB("number " + text + " is out of range (not a finite double)");
    if (integral) {
      errno = 0;
      long long x = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == 0) {
        v.isInteger_ = true;
        v.integer_ = x;
      }
    }
    // 8.0 and 1e4 are not integers: a shape of [64.0] or a token id of 1e4
    // is more likely a mistake than a convention.
    return true;
  }
};
} // namespace tbc::json

std::optional<Value> tbc::json::parse(std::string_view text, ParseError &error,
                                      const Limits &limits) {
  error = {};
  return Parser(text, error, limits).document();
}

std::string tbc::json::formatNumber(double d) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  return buf;
}

static void quoteTo(const std::string &str, std::string &out) {
  out += '"';
  for (unsigned char c : str) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
  }
  out += '"';
}

static void serializeTo(const Value &v, std::string &out) {
  switch (v.kind()) {
  case Value::Kind::Null: out += "null"; break;
  case Value::Kind::Bool: out += v.asBool() ? "true" : "false"; break;
  case Value::Kind::Number:
    out += v.isInteger() ? std::to_string(v.asInt()) : formatNumber(v.asDouble());
    break;
  case Value::Kind::String: quoteTo(v.asString(), out); break;
  case Value::Kind::Array:
    out += '[';
    for (size_t i = 0; i < v.elements().size(); ++i) {
      if (i)
        out += ", ";
      serializeTo(v.elements()[i], out);
    }
    out += ']';
    break;
  case Value::Kind::Object:
    out += '{';
    for (size_t i = 0; i < v.members().size(); ++i) {
      if (i)
        out += ", ";
      quoteTo(v.members()[i].first, out);
      out += ": ";
      serializeTo(v.members()[i].second, out);
    }
    out += '}';
    break;
  }
}

std::string tbc::json::quote(const std::string &str) {
  std::string out;
  quoteTo(str, out);
  return out;
}

std::string tbc::json::serialize(const Value &v) {
  std::string out;
  serializeTo(v, out);
  return out;
}

bool tbc::json::equal(const Value &a, const Value &b) {
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case Value::Kind::Null: return true;
  case Value::Kind::Bool: return a.asBool() == b.asBool();
  case Value::Kind::Number:
    if (a.isInteger() && b.isInteger())
      return a.asInt() == b.asInt();
    return a.asDouble() == b.asDouble();
  case Value::Kind::String: return a.asString() == b.asString();
  case Value::Kind::Array:
    if (a.elements().size() != b.elements().size())
      return false;
    for (size_t i = 0; i < a.elements().size(); ++i)
      if (!equal(a.elements()[i], b.elements()[i]))
        return false;
    return true;
  case Value::Kind::Object:
    if (a.members().size() != b.members().size())
      return false;
    for (const auto &[k, v] : a.members()) {
      const Value *o = b.get(k);
      if (!o || !equal(v, *o))
        return false;
    }
    return true;
  }
  return false;
}

std::string tbc::json::readObjectFile(const std::string &path, const Limits &limits,
                                      Value &out) {
  std::string text;
  if (std::string why = readRegularFile(path, limits.maxBytes, text); !why.empty())
    return why;
  ParseError pe;
  std::optional<Value> doc = parse(text, pe, limits);
  if (!doc || !doc->isObject())
    return path + ":" + std::to_string(pe.pos.line) + ":" + std::to_string(pe.pos.column) +
           ": invalid JSON: " + (doc ? "expected an object" : pe.message);
  out = std::move(*doc);
  return "";
}
