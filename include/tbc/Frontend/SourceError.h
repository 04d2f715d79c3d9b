//===- SourceError.h - an error that points into a user's file -*- C++ -*-===//

#ifndef TBC_FRONTEND_SOURCEERROR_H
#define TBC_FRONTEND_SOURCEERROR_H

#include <string>

namespace tbc {

/// "file:line:col: field 'x': message"; line 0 means "the whole file".
struct SourceError {
  std::string file;
  int line = 0, column = 0;
  std::string field;
  std::string message;

  bool empty() const { return message.empty(); }
  std::string str() const {
    std::string s = file;
    if (line > 0)
      s += ":" + std::to_string(line) + ":" + std::to_string(column);
    s += ": ";
    if (!field.empty())
      s += "field '" + field + "': ";
    return s + message;
  }
};

} // namespace tbc

#endif // TBC_FRONTEND_SOURCEERROR_H
