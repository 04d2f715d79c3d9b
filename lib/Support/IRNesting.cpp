//===- IRNesting.cpp - bound IR nesting before MLIR's parser sees it ------===//

#include "tbc/Support/IRNesting.h"

std::string tbc::checkIRNesting(std::string_view text, int limit) {
  int depth = 0, line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      break;
    case '"': // a string literal: skip to its closing quote
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
      }
      break;
    case '/': // a comment: skip to the end of the line
      if (i + 1 < text.size() && text[i + 1] == '/')
        while (i + 1 < text.size() && text[i + 1] != '\n')
          ++i;
      break;
    case '{':
    case '(':
    case '[':
    case '<':
      if (++depth > limit)
        return "line " + std::to_string(line) + ": brackets nest deeper than " +
               std::to_string(limit) + " levels; tbc refuses IR this deep " +
               "(its parser is recursive)";
      break;
    case '}':
    case ')':
    case ']':
      depth = depth > 0 ? depth - 1 : 0;
      break;
    case '>':
      if (i == 0 || text[i - 1] != '-') // '->' is an arrow, not a bracket
        depth = depth > 0 ? depth - 1 : 0;
      break;
    default:
      break;
    }
  }
  return "";
}
