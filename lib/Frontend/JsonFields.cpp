//===- JsonFields.cpp - unknown fields and did-you-mean -------------------===//

#include "JsonFields.h"

#include <algorithm>

using namespace tbc;

static size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

void tbc::failUnknownFields(JsonFields &f, const json::Value &object,
                            const std::set<std::string> &read,
                            const std::string &base) {
  for (const auto &[key, value] : object.members()) {
    if (!f.ok())
      return;
    std::string path = base + key;
    if (read.count(path)) {
      // A section the reader went into: its fields are checked too.
      bool entered = std::any_of(read.begin(), read.end(), [&](const std::string &r) {
        return r.size() > path.size() && r.compare(0, path.size() + 1, path + ".") == 0;
      });
      if (entered && value.isObject())
        failUnknownFields(f, value, read, path + ".");
      continue;
    }
    // The fields read beside it, and the closest of them.
    std::string best, known;
    size_t bestDistance = 3; // at most two edits away
    for (const std::string &r : read) {
      if (r.compare(0, base.size(), base) != 0 ||
          r.find('.', base.size()) != std::string::npos)
        continue;
      std::string sibling = r.substr(base.size());
      known += (known.empty() ? "" : ", ") + sibling;
      size_t d = editDistance(key, sibling);
      if (d < bestDistance) {
        bestDistance = d;
        best = sibling;
      }
    }
    f.fail(path, best.empty() ? "unknown field (known here: " + known + ")"
                              : "unknown field (did you mean '" + best + "'?)");
  }
}
