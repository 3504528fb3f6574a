package buildcache

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// talk sends reqs (each a JSON line, a put's body a second line) to a
// cache and returns its answers after the first, which names its commands.
func talk(t *testing.T, c *cache, lines ...string) []response {
	t.Helper()
	var out bytes.Buffer
	if err := c.serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	var hello response
	if err := dec.Decode(&hello); err != nil || strings.Join(hello.KnownCommands, ",") != "get,put,close" {
		t.Fatalf("first message = %+v, %v", hello, err)
	}
	var res []response
	for dec.More() {
		var r response
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	return res
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		m[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A put goes to the own layer only; a get finds the own layer's entry
// first, then the shared one's; what the shared layer holds never
// changes.
func TestLayers(t *testing.T) {
	shared, own, other := t.TempDir(), t.TempDir(), t.TempDir()
	// AAAA is action 0x000000, output 0x0102; "aGk=" is "hi".
	setup, err := newCache("", shared)
	if err != nil {
		t.Fatal(err)
	}
	if res := talk(t, setup, `{"ID":1,"Command":"put","ActionID":"AAAA","OutputID":"AQI=","BodySize":2}`, `"aGk="`,
		`{"ID":2,"Command":"close"}`); len(res) != 2 || res[0].Err != "" || res[0].DiskPath != filepath.Join(shared, "o", "0102") {
		t.Fatalf("setup's put = %+v", res)
	}
	before := snapshot(t, shared)

	run, err := newCache(shared, own)
	if err != nil {
		t.Fatal(err)
	}
	res := talk(t, run,
		`{"ID":1,"Command":"get","ActionID":"AAAA"}`,
		`{"ID":2,"Command":"get","ActionID":"AAAB"}`,
		// The run puts another output under the shared action: only it
		// sees that.
		`{"ID":3,"Command":"put","ActionID":"AAAA","OutputID":"AQM=","BodySize":3}`, `"Ynll"`,
		`{"ID":4,"Command":"get","ActionID":"AAAA"}`,
		`{"ID":5,"Command":"bogus"}`,
		`{"ID":6,"Command":"put","ActionID":"AAAC","OutputID":"AQM=","BodySize":5}`, `"Ynll"`,
	)
	want := []struct {
		id         int64
		miss       bool
		path, err  string
		size       int64
		outputByte byte
	}{
		{1, false, filepath.Join(shared, "o", "0102"), "", 2, 2},
		{2, true, "", "", 0, 0},
		{3, false, filepath.Join(own, "o", "0103"), "", 0, 0},
		{4, false, filepath.Join(own, "o", "0103"), "", 3, 3},
		{5, false, "", `unknown command "bogus"`, 0, 0},
		{6, false, "", "put of 3 bytes, 5 said", 0, 0},
	}
	if len(res) != len(want) {
		t.Fatalf("answers = %+v", res)
	}
	for i, w := range want {
		r := res[i]
		if r.ID != w.id || r.Miss != w.miss || r.DiskPath != w.path || r.Err != w.err || r.Size != w.size ||
			(w.outputByte != 0 && (len(r.OutputID) != 2 || r.OutputID[1] != w.outputByte)) {
			t.Errorf("answer %d = %+v, want %+v", w.id, r, w)
		}
	}
	if got := snapshot(t, shared); len(got) != len(before) || got[filepath.Join(shared, "o", "0102")] != "hi" {
		t.Errorf("the shared layer changed: %v", got)
	}

	// Another run with the same shared layer sees none of the first's.
	next, err := newCache(shared, other)
	if err != nil {
		t.Fatal(err)
	}
	if res := talk(t, next, `{"ID":1,"Command":"get","ActionID":"AAAA"}`); len(res) != 1 || res[0].DiskPath != filepath.Join(shared, "o", "0102") {
		t.Errorf("another run's get = %+v", res)
	}
}

// An entry whose output is missing, of another size or whose line is not
// one this program wrote is a miss: the go command compiles again.
func TestDamagedEntriesMiss(t *testing.T) {
	dir := t.TempDir()
	c, err := newCache("", dir)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/000001", "v1 0102 2 0\n") // output missing
	write("a/000002", "v1 0103 9 0\n") // size differs
	write("o/0103", "abc")
	write("a/000003", "v2 0103 3 0\n") // not our format
	write("a/000004", "v1 zz 3 0\n")   // not hex
	res := talk(t, c, `{"ID":1,"Command":"get","ActionID":"AAAB"}`, `{"ID":2,"Command":"get","ActionID":"AAAC"}`,
		`{"ID":3,"Command":"get","ActionID":"AAAD"}`, `{"ID":4,"Command":"get","ActionID":"AAAE"}`)
	for _, r := range res {
		if !r.Miss || r.DiskPath != "" {
			t.Errorf("answer %d = %+v, want a miss", r.ID, r)
		}
	}
	if len(res) != 4 {
		t.Fatalf("answers = %+v", res)
	}
}
