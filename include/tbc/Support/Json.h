//===- Json.h - a small JSON reader that remembers where things are -*- C++ -*-===//
//
// tbc reads JSON from strangers (config.json, native specs, safetensors
// headers, module manifests) and must say exactly where a problem is. This
// reader keeps the line and column of every value, bounds nesting depth, and
// never throws. It is LLVM-free so the runtime can use it too.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_JSON_H
#define TBC_SUPPORT_JSON_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tbc::json {

/// Line and column (1-based) of a value in its source text.
struct Pos {
  int line = 0, column = 0;
};

class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return kind_; }
  Pos pos() const { return pos_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }
  /// A number written without fraction or exponent that fits in int64.
  bool isInteger() const { return kind_ == Kind::Number && isInteger_; }

  bool asBool() const { return bool_; }
  double asDouble() const { return number_; }
  int64_t asInt() const { return integer_; }
  const std::string &asString() const { return string_; }
  const std::vector<Value> &elements() const { return elements_; }
  /// Object members in source order.
  const std::vector<std::pair<std::string, Value>> &members() const {
    return members_;
  }
  /// The member named `key`, or nullptr (also when this is not an object).
  const Value *get(std::string_view key) const;

  static const char *kindName(Kind k);

private:
  friend class Parser;
  Kind kind_ = Kind::Null;
  Pos pos_;
  bool bool_ = false;
  bool isInteger_ = false;
  double number_ = 0;
  int64_t integer_ = 0;
  std::string string_;
  std::vector<Value> elements_;
  std::vector<std::pair<std::string, Value>> members_;
};

struct ParseError {
  Pos pos;
  std::string message;
};

/// Compact JSON text of `v` (members in source order); parse(serialize(v))
/// gives back an equal value.
std::string serialize(const Value &v);

/// `str` as a JSON string literal, quotes and escapes included.
std::string quote(const std::string &str);

/// Whether two values are equal as JSON: numbers by value (1 == 1.0),
/// objects regardless of member order.
bool equal(const Value &a, const Value &b);

/// Shortest round-tripping text of a double (1e-05, 10000, 0.5).
std::string formatNumber(double d);

/// What one document may cost before it is built: a reader of strangers'
/// files refuses a document past these before allocating for it (a parsed
/// value takes ~150 bytes, so 100 MB of `[0,0,...]` would take 7 GB).
struct Limits {
  size_t maxBytes = size_t(16) << 20;
  size_t maxValues = size_t(1) << 20;
};

/// Parses one JSON document (RFC 8259; duplicate keys are an error; numbers
/// must be finite doubles, so 1e999 is an error, not infinity).
/// Returns std::nullopt and fills `error` on failure.
std::optional<Value> parse(std::string_view text, ParseError &error,
                           const Limits &limits = Limits());

/// Reads the JSON object in the file at `path` (a config.json and the like)
/// through readRegularFile, within `limits`. Returns "" and fills `out`, or
/// "<path>: <reason>" (with line:column for a syntax error).
std::string readObjectFile(const std::string &path, const Limits &limits, Value &out);

} // namespace tbc::json

#endif // TBC_SUPPORT_JSON_H
