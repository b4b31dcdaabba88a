#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace pmcprof::testing {

// A temporary directory tree (a fake sysfs, tracefs), removed at the end of the test.
class Tree {
 public:
  Tree()
      : root_(std::filesystem::temp_directory_path() /
              ("pmcprof-tree-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {
    std::filesystem::create_directories(root_);
  }
  ~Tree() { std::filesystem::remove_all(root_); }
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;
  void file(const std::string& rel, const std::string& text) {
    std::filesystem::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::string path() const { return root_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path root_;
};

}  // namespace pmcprof::testing
