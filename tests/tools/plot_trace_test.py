"""scripts/plot-trace on hostile traces and on a large one (ctest: PlotScripts.plot_trace_test).

Every malformed input ends with exit code 2 and one line on stderr naming the file, where (the
event and its line) and what was expected; never a traceback, never a hang, nothing written. A
trace of 2 million events is drawn well within the test's time-out (it took over an hour when
every event was an artist of its own).
"""
import os
import stat
import unittest

from plot_testing import PlotScriptTest, have_plotting


def metadata(pid=1, tid=1000):
    return ('{"ph":"M","name":"process_name","pid":%d,"args":{"name":"instance 0 (host h)"}},\n'
            '{"ph":"M","name":"thread_name","pid":%d,"tid":%d,"args":{"name":"host: main"}}'
            % (pid, pid, tid))


def trace(*events):
    """A trace object holding the metadata events and these (JSON texts), one per line."""
    return '{"traceEvents":[\n' + ",\n".join((metadata(),) + events) + '\n],"otherData":{}}\n'


GOOD = '{"name":"step 1","cat":"step","ph":"X","ts":0,"dur":50,"pid":1,"tid":1000,"args":{"step":1}}'


def op(**fields):
    e = {"name": '"MatMul"', "cat": '"op"', "ph": '"X"', "ts": "10", "dur": "5", "pid": "1",
         "tid": "2", "args": "{}"}
    e.update(fields)
    return "{" + ",".join('"%s":%s' % (k, v) for k, v in e.items() if v is not None) + "}"


@unittest.skipUnless(have_plotting(), "no matplotlib/numpy for /usr/bin/python3")
class PlotTrace(PlotScriptTest):
    SCRIPT = "plot-trace"

    def arguments(self, path, out, extra):
        return [path, out] + list(extra)

    def test_a_real_shape_of_trace_is_drawn(self):
        path = self.write("ok.json", trace(GOOD, op(), op(ts="20", tid="3"), op(cat='"bucket"')))
        r = self.run_script(path, self.out, "--steps", "1:1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertPicture(self.out)
        self.assertIn("4 events, 3 tracks", r.stdout)

    def test_names_that_matplotlib_would_parse_are_drawn_as_they_are(self):
        odd = ('{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"$\\\\frac{1}{$ \\u0000 %s"}}'
               % ("x" * 5000))
        path = self.write("$odd$.json", trace(odd, op(), op(cat='"$\\\\sqrt{"', name='"\\u00e9$"')))
        r = self.run_script(path, self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_malformed_files(self):
        self.refused(self.write("empty.json", ""), "empty.json", "is empty")
        self.refused(self.write("space.json", "  \n"), "space.json", "is empty")
        self.refused(self.write("junk.json", bytes(range(256)) * 4), "junk.json:2", "not UTF-8")
        self.refused(self.write("text.json", "{nope"), "text.json:1", "not JSON")
        self.refused(self.write("list.json", "[1,2]"), "list.json:1", "expected a JSON object")
        self.refused(self.write("none.json", '{"otherData":{}}'), "none.json", "has no traceEvents")
        self.refused(self.write("events.json", '{"traceEvents":{}}'), "events.json:1",
                     "traceEvents to be a list")
        cut = trace(GOOD, op())
        self.refused(self.write("cut.json", cut[:len(cut) // 2]), "cut.json:", "not JSON in event")
        self.refused(self.write("after.json", trace(GOOD) + "{}"), "after.json:", "after the end")
        self.refused(self.write("twice.json", '{"traceEvents":[],"traceEvents":[]}'),
                     "twice.json", "twice")
        self.refused(self.write("deep.json", '{"traceEvents":[],"otherData":' + "[" * 100000
                                + "]" * 100000 + "}"), "deep.json:1", "nested too deeply")
        self.refused(self.write("deepevent.json", trace(op(args='{"a":' + "[" * 100000 + "]" * 100000
                                                           + "}"))), "deepevent.json:4", "event 2")
        self.refused(self.write("noevents.json", trace()), "noevents.json", "no events to draw")

    def test_file_kinds(self):
        self.refused(os.path.join(self.tmp, "missing.json"), "missing.json", "cannot read")
        os.mkdir(os.path.join(self.tmp, "dir.json"))
        self.refused(os.path.join(self.tmp, "dir.json"), "dir.json is a directory")
        fifo = os.path.join(self.tmp, "fifo.json")
        os.mkfifo(fifo)
        self.refused(fifo, "fifo.json is a FIFO")  # at once: nobody ever writes to it

    def test_wrong_fields_name_the_event_and_its_line(self):
        # (event text, what the message says); the event is event 2 on line 4 of its file.
        cases = [
            ("5", "event 2 is 5, expected an object"),
            ('"X"', "event 2 is 'X', expected an object"),
            ('{"name":"x"}', "event 2: ph is missing"),
            (op(ph="[1]"), "event 2: ph is a list"),
            (op(ts="1" * 400), "event 2: ts is an integer of 1326 bits, expected microseconds"),
            (op(ts="1e400"), "event 2: ts is inf"),
            (op(ts="1e300"), "event 2: ts is 1e+300"),
            (op(ts=None), "event 2: ts is missing"),
            (op(ts='"10"'), "event 2: ts is '10'"),
            (op(ts="true"), "event 2: ts is true"),
            (op(dur="-5"), "event 2: dur is -5, expected microseconds from 0"),
            (op(dur="-1e-9"), "event 2: dur is -1e-09"),
            (op(dur="NaN"), "NaN is not JSON"),
            (op(dur="-Infinity"), "-Infinity is not JSON"),
            (op(dur="1" * 5000), "event 2"),
            (op(cat='{"a":1}'), "event 2: cat is an object, expected a string"),
            (op(cat="7"), "event 2: cat is 7"),
            (op(name="[]"), "event 2: name is a list"),
            (op(args="[]"), "event 2: args is a list, expected an object"),
            (op(pid='"1"'), "event 2: pid is '1', expected an integer"),
            (op(pid="1.5"), "event 2: pid is 1.5"),
            (op(tid=None), "event 2: tid is missing"),
            (op(tid="1" * 30), "event 2: tid is an integer of 97 bits"),
            (op(cat='"step"', args='{"step":"one"}'), "event 2: args.step is 'one'"),
            (op(cat='"step"', args='{"step":-1}'), "event 2: args.step is -1"),
            ('{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":7}}',
             "event 2: a thread_name event needs args.name"),
            ('{"ph":"M","name":"process_name","pid":1}', "event 2: a process_name event needs"),
            ('{"ph":"M","name":"thread_name","pid":1,"args":{"name":"t"}}', "event 2: tid is missing"),
            ('{"ph":"M","name":{},"pid":1}', "event 2: a metadata event's name is an object"),
        ]
        for i, (event, message) in enumerate(cases):
            with self.subTest(event=event[:80]):
                name = "case%d.json" % i
                self.refused(self.write(name, trace(event)), name + ":4: ", message)

    def test_usage_and_output(self):
        good = self.write("good.json", trace(GOOD, op()))
        self.refused(good, "no step in 5..6", extra=("--steps", "5:6"))
        self.refused(good, "--steps", extra=("--steps", "3:1"))
        self.refused(good, "--width", extra=("--width", "nan"))
        self.refused(good, "is the trace itself", out=good)
        os.mkdir(os.path.join(self.tmp, "outdir"))
        self.refused(good, "outdir", "a directory", out=os.path.join(self.tmp, "outdir"))
        fifo = os.path.join(self.tmp, "out.fifo")
        os.mkfifo(fifo)
        self.refused(good, "out.fifo", "not a regular file", out=fifo)
        self.refused(good, "no/such", out=os.path.join(self.tmp, "no", "such", "out.png"))
        many = ",".join(op(tid=str(t)) for t in range(1500))
        self.refused(self.write("tracks.json", trace(many)), "1500 tracks", "at most 1000")
        with open(good, "rb") as f:
            self.assertIn(b"traceEvents", f.read())
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith(".plot-trace")], [])
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))

    def test_two_million_events_are_drawn(self):
        # About 200 MB of JSON: 8 replicas' ops and a step a track, as xtrain writes them. No time
        # is asserted: the test's own time-out (and ctest's) is the bound.
        path = os.path.join(self.tmp, "big.json")
        with open(path, "w") as f:
            f.write('{"traceEvents":[\n' + metadata() + ",\n")
            chunk = []
            t = 0
            for step in range(1, 10001):
                begin = t
                for k in range(199):
                    chunk.append('{"name":"MatMul \'fc%d\' (ai.onnx opset 13)","cat":"op","ph":"X",'
                                 '"ts":%d.25,"dur":1.5,"pid":1,"tid":%d,"args":{}}'
                                 % (k, t, 1 + k % 8))
                    t += 1
                chunk.append('{"name":"step %d","cat":"step","ph":"X","ts":%d,"dur":%d,"pid":1,'
                             '"tid":1000,"args":{"step":%d}}' % (step, begin, t - begin, step))
                if len(chunk) >= 20000:
                    f.write(",\n".join(chunk) + ",\n")
                    chunk = []
            chunk.append('{"ph":"i","name":"end","pid":1,"tid":1000,"ts":0}')
            f.write(",\n".join(chunk) + '\n],"displayTimeUnit":"ms"}\n')
        r = self.run_script(path, self.out, timeout=280)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2000000 events, 9 tracks", r.stdout)
        r = self.run_script(path, self.out, "--steps", "500:501", timeout=280)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(403 events", r.stdout)  # steps 500, 501 and what overlaps them


if __name__ == "__main__":
    unittest.main()
