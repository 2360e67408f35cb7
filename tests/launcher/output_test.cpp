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

TEST(XrunOutput, EngineTagsAreParsed) {
  auto m = parseEngineLine(EngineTag::Mpirun, "[1,12]<stdout>:hello [1,3]");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->instance, 12);
  EXPECT_EQ(m->text, "hello [1,3]");
  m = parseEngineLine(EngineTag::Mpirun, "[1,0]<stderr>:");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->instance, 0);
  EXPECT_EQ(m->text, "");
  EXPECT_FALSE(parseEngineLine(EngineTag::Mpirun, "-----------"));
  EXPECT_FALSE(parseEngineLine(EngineTag::Mpirun, "[1,x]<stdout>:no"));
  EXPECT_FALSE(parseEngineLine(EngineTag::Mpirun, "mpirun noticed that process rank 1"));

  auto s = parseEngineLine(EngineTag::Srun, " 3: text: more");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->instance, 3);
  EXPECT_EQ(s->text, "text: more");
  s = parseEngineLine(EngineTag::Srun, "10: ");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->instance, 10);
  EXPECT_EQ(s->text, "");
  EXPECT_FALSE(
      parseEngineLine(EngineTag::Srun, "srun: error: n1: task 2: Exited with exit code 3"));
  EXPECT_FALSE(parseEngineLine(EngineTag::Srun, "12 apples"));
}

TEST(XrunOutput, EngineFailureReportsNameTheInstance) {
  EXPECT_EQ(instanceBlamedBy(EngineTag::Mpirun, "  Process name: [[17870,1],2]"), 2);
  EXPECT_EQ(instanceBlamedBy(EngineTag::Mpirun,
                             "mpirun noticed that process rank 5 with PID 0 on node vm exited on "
                             "signal 9 (Killed)."),
            5);
  EXPECT_FALSE(instanceBlamedBy(EngineTag::Mpirun, "Exit code:    3"));
  EXPECT_EQ(instanceBlamedBy(EngineTag::Srun, "srun: error: n1: task 7: Exited with exit code 3"),
            7);
  EXPECT_EQ(instanceBlamedBy(EngineTag::Srun, "srun: error: n1: task 0: Killed"), 0);
  EXPECT_FALSE(instanceBlamedBy(EngineTag::Srun, "srun: error: Timed out"));
}

TEST(XrunOutput, MpirunChunksAreJoinedIntoLines) {
  MpirunLineJoiner j;
  std::vector<MpirunLineJoiner::Line> out;
  auto texts = [&] {
    std::vector<std::string> t;
    for (const auto& l : out) {
      t.push_back((l.instance ? std::to_string(*l.instance) : std::string("-")) + "|" + l.tag +
                  "|" + l.text);
    }
    out.clear();
    return t;
  };
  j.feed("[1,2]<stderr>:xtrain: [1,2]<stderr>:bad thing[1,2]<stderr>:", out);
  EXPECT_EQ(texts(), (Lines{"2|[1,2]<stderr>:|xtrain: bad thing"}));
  // A piece of instance 0 waits for its newline while instance 1's line completes.
  j.feed("[1,0]<stdout>:abc[1,1]<stdout>:def", out);
  EXPECT_EQ(texts(), (Lines{"1|[1,1]<stdout>:|def"}));
  j.feed("[1,0]<stdout>:ghi", out);
  EXPECT_EQ(texts(), (Lines{"0|[1,0]<stdout>:|abcghi"}));
  j.feed("------", out);
  j.feed("[1,3]<stdout>:a [x] [1,y]<stdout>: b", out);
  EXPECT_EQ(texts(), (Lines{"-||------", "3|[1,3]<stdout>:|a [x] [1,y]<stdout>: b"}));
  j.feed("[1,0]<stdout>:left[1,0]<stderr>:err", out);
  EXPECT_EQ(texts(), (Lines{"0|[1,0]<stderr>:|err"}));
  j.finish(out);
  EXPECT_EQ(texts(), (Lines{"0|[1,0]<stdout>:|left"}));
}

}  // namespace
}  // namespace xtrain::launcher
