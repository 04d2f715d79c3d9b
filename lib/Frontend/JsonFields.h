//===- JsonFields.h - typed, located access to JSON object fields -*- C++ -*-===//
//
// Readers of config.json and native specs pull typed fields out of JSON
// objects. The first problem sticks in a SourceError naming the file, the
// line and column and the field; later calls return defaults, so a reader
// reads straight through and checks ok() once.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_FRONTEND_JSONFIELDS_H
#define TBC_LIB_FRONTEND_JSONFIELDS_H

#include "tbc/Frontend/SourceError.h"
#include "tbc/Support/Json.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tbc {

class JsonFields {
public:
  /// `prefix` is prepended to field names in messages ("attention." ...).
  JsonFields(const json::Value &object, const std::string &file,
             SourceError &error, std::string prefix = "")
      : obj(object), file(file), err(error), prefix(std::move(prefix)) {}

  bool ok() const { return err.empty(); }
  bool has(const std::string &key) const { return raw(key) != nullptr; }
  /// True when the file does not name `key` at all. A key set to null is
  /// named: transformers then reads None, not its config class's default.
  bool absent(const std::string &key) const {
    raw(key);
    return obj.get(key) == nullptr;
  }
  const json::Value *raw(const std::string &key) const {
    if (touched)
      touched->insert(trackAs.empty() ? prefix + key : trackAs + "." + prefix + key);
    const json::Value *v = obj.get(key);
    return v && !v->isNull() ? v : nullptr;
  }

  /// Records in `keys` the dotted path of every field read from now on
  /// (through this object and those nested() from it), under `as` when this
  /// object is itself a field of the file (Gemma 3's text_config): what a
  /// compiled module depends on, and what a reader knows (unknownField).
  void trackReads(std::set<std::string> *keys, std::string as = "") {
    touched = keys;
    trackAs = std::move(as);
  }

  /// Records an error at `key` (a dotted path such as "attention.heads" is
  /// followed into nested objects); at the object itself when absent.
  void fail(const std::string &key, const std::string &message) {
    if (!err.empty())
      return;
    json::Pos p = obj.pos();
    const json::Value *cur = &obj;
    size_t start = 0;
    while (cur) {
      size_t dot = key.find('.', start);
      cur = cur->get(key.substr(start, dot == std::string::npos
                                           ? std::string::npos
                                           : dot - start));
      if (cur)
        p = cur->pos();
      if (dot == std::string::npos)
        break;
      start = dot + 1;
    }
    err = {file, p.line, p.column, prefix + key, message};
  }

  std::optional<int64_t> optInt(const std::string &key, int64_t min,
                                int64_t max) {
    const json::Value *v = raw(key);
    if (!v || !ok())
      return std::nullopt;
    if (!v->isInteger()) {
      fail(key, std::string("expected an integer, got ") +
                    json::Value::kindName(v->kind()));
      return std::nullopt;
    }
    if (v->asInt() < min || v->asInt() > max) {
      fail(key, "value " + std::to_string(v->asInt()) + " is outside [" +
                    std::to_string(min) + ", " + std::to_string(max) + "]");
      return std::nullopt;
    }
    return v->asInt();
  }
  int64_t reqInt(const std::string &key, int64_t min, int64_t max) {
    if (!has(key)) {
      fail(key, "required field is missing");
      return 0;
    }
    return optInt(key, min, max).value_or(0);
  }
  int64_t getInt(const std::string &key, int64_t dflt, int64_t min,
                 int64_t max) {
    return optInt(key, min, max).value_or(dflt);
  }

  /// An integer whose config class defaults to `classDefault`: that when the
  /// key is absent, `ifNull` when it is null (transformers' None).
  int64_t getClassInt(const std::string &key, int64_t classDefault, int64_t ifNull,
                      int64_t min, int64_t max) {
    return getInt(key, absent(key) ? classDefault : ifNull, min, max);
  }

  std::optional<double> optNumber(const std::string &key) {
    const json::Value *v = raw(key);
    if (!v || !ok())
      return std::nullopt;
    if (!v->isNumber()) {
      fail(key, std::string("expected a number, got ") +
                    json::Value::kindName(v->kind()));
      return std::nullopt;
    }
    return v->asDouble();
  }
  double getNumber(const std::string &key, double dflt) {
    return optNumber(key).value_or(dflt);
  }
  /// A number that must be > 0 when present.
  std::optional<double> optPositive(const std::string &key) {
    std::optional<double> d = optNumber(key);
    if (d && !(*d > 0)) {
      fail(key, "must be positive, got " + json::formatNumber(*d));
      return std::nullopt;
    }
    return d;
  }

  /// A positive number whose config class defaults to `classDefault`:
  /// that when the key is absent, none when it is null.
  std::optional<double> optPositive(const std::string &key,
                                    std::optional<double> classDefault) {
    return absent(key) ? classDefault : optPositive(key);
  }

  /// An array of numbers (nullopt when absent or on error).
  std::optional<std::vector<double>> optNumbers(const std::string &key) {
    const json::Value *v = raw(key);
    if (!v || !ok())
      return std::nullopt;
    std::vector<double> out;
    if (v->isArray())
      for (const json::Value &e : v->elements()) {
        if (!e.isNumber())
          break;
        out.push_back(e.asDouble());
      }
    if (!v->isArray() || out.size() != v->elements().size()) {
      fail(key, "expected an array of numbers");
      return std::nullopt;
    }
    return out;
  }

  bool getBool(const std::string &key, bool dflt) {
    const json::Value *v = raw(key);
    if (!v || !ok())
      return dflt;
    if (!v->isBool()) {
      fail(key, std::string("expected true or false, got ") +
                    json::Value::kindName(v->kind()));
      return dflt;
    }
    return v->asBool();
  }

  std::string getString(const std::string &key, const std::string &dflt) {
    const json::Value *v = raw(key);
    if (!v || !ok())
      return dflt;
    if (!v->isString()) {
      fail(key, std::string("expected a string, got ") +
                    json::Value::kindName(v->kind()));
      return dflt;
    }
    return v->asString();
  }

  /// A string that must be one of `choices`.
  std::string getChoice(const std::string &key, const std::string &dflt,
                        const std::vector<std::string> &choices) {
    std::string s = getString(key, dflt);
    if (!ok())
      return dflt;
    for (const std::string &c : choices)
      if (s == c)
        return s;
    std::string list;
    for (const std::string &c : choices)
      list += (list.empty() ? "" : ", ") + c;
    fail(key, "unknown value '" + s + "' (expected one of: " + list + ")");
    return dflt;
  }

  /// A nested object (nullptr when absent; an error when not an object).
  const json::Value *getObject(const std::string &key) {
    const json::Value *v = raw(key);
    if (!v || !ok())
      return nullptr;
    if (!v->isObject()) {
      fail(key, std::string("expected an object, got ") +
                    json::Value::kindName(v->kind()));
      return nullptr;
    }
    return v;
  }

  JsonFields nested(const json::Value &child, const std::string &key) {
    JsonFields n(child, file, err, prefix + key + ".");
    n.trackReads(touched, trackAs);
    return n;
  }

private:
  std::set<std::string> *touched = nullptr;
  std::string trackAs;
  const json::Value &obj;
  const std::string &file;
  SourceError &err;
  std::string prefix;
};

/// The first field of `object` (recursively, for objects whose fields were
/// read) that no reader asked for, given the dotted paths in `read`; fails
/// `f` at it with a did-you-mean among the fields read beside it. Native
/// specs are tbc's own format: a typo ("kv_head") must not pass silently.
void failUnknownFields(JsonFields &f, const json::Value &object,
                       const std::set<std::string> &read,
                       const std::string &base = "");

} // namespace tbc

#endif // TBC_LIB_FRONTEND_JSONFIELDS_H
