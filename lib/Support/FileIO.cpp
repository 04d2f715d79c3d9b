//===- FileIO.cpp - reading strangers' files, writing outputs safely ------===//

#include "tbc/Support/FileIO.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int tbc::openRegularFile(const std::string &path, uint64_t &size,
                         std::string &error) {
  if (path.empty()) {
    error = "empty path";
    return -1;
  }
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = path + ": not a regular file";
    return -1;
  }
  // Reads of a regular file ignore O_NONBLOCK; clear it all the same.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  size = uint64_t(st.st_size);
  return fd;
}

std::string tbc::readRegularFile(const std::string &path, uint64_t maxBytes,
                                 std::string &out) {
  uint64_t size = 0;
  std::string error;
  int fd = openRegularFile(path, size, error);
  if (fd < 0)
    return error;
  if (size > maxBytes) {
    ::close(fd);
    return path + ": file of " + std::to_string(size) +
           " bytes exceeds the reader's limit of " + std::to_string(maxBytes) +
           " bytes";
  }
  out.assign(size_t(size), '\0');
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, out.data() + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      return path + ": cannot read: " + why;
    }
    if (n == 0) // the file shrank while being read
      break;
    done += size_t(n);
  }
  ::close(fd);
  out.resize(done);
  return "";
}

/// Whether `st` is the null device (`-o /dev/null`, however spelled): the
/// one special file an output may go to, since nothing is written to it.
static bool isNullDevice(const struct stat &st) {
  struct stat null;
  return S_ISCHR(st.st_mode) && ::stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) &&
         st.st_rdev == null.st_rdev;
}

std::string tbc::checkOutputPath(const std::string &path,
                                 const std::vector<std::string> &inputs) {
  if (path.empty())
    return "the output path is empty";
  struct stat out;
  if (::stat(path.c_str(), &out) != 0) {
    struct stat link;
    if (::lstat(path.c_str(), &link) == 0)
      return path + ": is a dangling symbolic link; refusing to write through it";
    return ""; // a new file
  }
  if (isNullDevice(out))
    return ""; // output discarded, as a user timing a run asks
  if (!S_ISREG(out.st_mode))
    return path + ": exists and is not a regular file; refusing to replace it";
  for (const std::string &input : inputs) {
    struct stat in;
    if (input.empty() || ::stat(input.c_str(), &in) != 0)
      continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      return path + ": is the input " + input + "; refusing to overwrite it";
    if (S_ISDIR(in.st_mode)) {
      // A file inside an input folder (its config.json, its weights).
      char *real = ::realpath(path.c_str(), nullptr);
      char *dir = ::realpath(input.c_str(), nullptr);
      bool inside = false;
      if (real && dir) {
        std::string r = real, d = std::string(dir) + "/";
        auto endsWith = [&](const char *suffix) {
          size_t n = std::strlen(suffix);
          return r.size() >= n && r.compare(r.size() - n, n, suffix) == 0;
        };
        // What a model folder is read from: its configs and checkpoints.
        inside = r.compare(0, d.size(), d) == 0 &&
                 (endsWith(".json") || endsWith(".safetensors"));
      }
      std::free(real);
      std::free(dir);
      if (inside)
        return path + ": lies inside the input folder " + input +
               "; refusing to overwrite a file of the model";
    }
  }
  return "";
}

std::string tbc::writeFileAtomically(const std::string &pathIn,
                                     std::string_view data) {
  std::string path = pathIn;
  if (path.empty())
    return "the output path is empty";
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (isNullDevice(st))
      return "";
    if (!S_ISREG(st.st_mode))
      return path + ": exists and is not a regular file; refusing to replace it";
    // Replace what a symlink points at, not the link itself.
    if (char *real = ::realpath(pathIn.c_str(), nullptr)) {
      path = real;
      std::free(real);
    }
  }
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return path + ": cannot create a temporary file: " + std::strerror(errno);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return path + ": write failed: " + why;
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return path + ": write failed: " + why;
  }
  // mkstemp creates 0600 files; outputs should be readable like any other.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(tmp.c_str(), 0666 & ~mask);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return path + ": cannot move the output into place: " + why;
  }
  return "";
}
