// Line splitting, tagging and the --only-output-from-instance filter.
#include "launcher/output.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xtrain::launcher {
namespace {

using Lines = std::vector<std::string>;

TEST(XrunOutput, SplitterJoinsPiecesAndKeepsPartialLines) {
  LineSplitter s;
  Lines lines;
  s.feed("ab", lines);
  EXPECT_TRUE(lines.empty());
  s.feed("c\nde", lines);
  s.feed("f\n\ng", lines);
  EXPECT_EQ(lines, (Lines{"abc", "def", ""}));
  EXPECT_EQ(s.finish(), "g");
  EXPECT_FALSE(s.finish().has_value());
}

TEST(XrunOutput, SplitterCapsRunawayLines) {
  LineSplitter s(4);
  Lines lines;
  s.feed("abcdefghij\nxy", lines);
  s.feed("zw\n", lines);
  EXPECT_EQ(lines, (Lines{"abcd", "efgh", "ij", "xyzw"}));
  EXPECT_FALSE(s.finish().has_value());
}

TEST(XrunOutput, Tags) {
  EXPECT_EQ(tagFor(TagFormat::Xrun, 3, Stream::Stdout), "[3] ");
  EXPECT_EQ(tagFor(TagFormat::Xrun, 3, Stream::Stderr), "[3] ");
  EXPECT_EQ(tagFor(TagFormat::Mpi, 12, Stream::Stdout), "[1,12]<stdout>:");
  EXPECT_EQ(tagFor(TagFormat::Mpi, 0, Stream::Stderr), "[1,0]<stderr>:");
  OutputPolicy p;
  EXPECT_EQ(renderLine(p, 1, Stream::Stdout, "hi"), "[1] hi\n");
  p.tag = false;
  EXPECT_EQ(renderLine(p, 1, Stream::Stdout, "hi"), "hi\n");
}

TEST(XrunOutput, OnlyOutputFromInstanceKeepsOtherInstancesErrors) {
  OutputPolicy p;
  p.onlyInstance = 1;
  EXPECT_TRUE(shouldPrint(p, 1, Stream::Stdout, "loss 0.3"));
  EXPECT_TRUE(shouldPrint(p, 1, Stream::Stderr, "note"));
  EXPECT_FALSE(shouldPrint(p, 0, Stream::Stdout, "loss 0.3"));
  EXPECT_FALSE(shouldPrint(p, 0, Stream::Stdout, "error: in stdout"));
  EXPECT_FALSE(shouldPrint(p, 0, Stream::Stderr, "just a note"));
  EXPECT_TRUE(shouldPrint(p, 0, Stream::Stderr, "ERROR: out of memory"));
  EXPECT_TRUE(
      shouldPrint(p, 2, Stream::Stderr, "terminate called after throwing an instance of 'x'"));
  EXPECT_TRUE(shouldPrint(p, 2, Stream::Stderr, "Segmentation fault (core dumped)"));
  EXPECT_TRUE(
      shouldPrint(p, 2, Stream::Stderr, "2026-11-21T10:05:16.123Z comm 1.2 E: rank 1 timed out"));
  p.onlyInstance.reset();
  EXPECT_TRUE(shouldPrint(p, 0, Stream::Stdout, "anything"));
}

TEST(XrunOutput, TailKeepsTheLastLines) {
  LineTail t(2);
  t.push("a");
  t.push("b");
  t.push("c");
  ASSERT_EQ(t.lines().size(), 2u);
  EXPECT_EQ(t.lines()[0], "b");
  EXPECT_EQ(t.lines()[1], "c");
}

}  // namespace
}  // namespace xtrain::launcher
