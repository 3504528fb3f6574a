package difftest

import (
	"reflect"
	"testing"
)

func TestRightHunks(t *testing.T) {
	cases := []struct {
		name string
		diff string
		want []Hunk
	}{
		{"two hunks", "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,2 +1,3 @@\n a\n+b\n c\n@@ -10,3 +11,2 @@ func F() {\n d\n-e\n f\n",
			[]Hunk{{"x.go", 1, 3}, {"x.go", 11, 12}}},
		{"a new file of one line, its header without counts", "diff --git a/n.go b/n.go\nnew file mode 100644\n--- /dev/null\n+++ b/n.go\n@@ -0,0 +1 @@\n+package n\n",
			[]Hunk{{"n.go", 1, 1}}},
		{"a deleted file shows no new lines", "diff --git a/d.go b/d.go\ndeleted file mode 100644\n--- a/d.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n",
			nil},
		{"an added line that reads like a header", "diff --git a/m.md b/m.md\n--- a/m.md\n+++ b/m.md\n@@ -1,1 +1,3 @@\n a\n+++ b/other\n+@@ -1 +1 @@\n",
			[]Hunk{{"m.md", 1, 3}}},
		{"a deleted line that reads like a header", "diff --git a/m.md b/m.md\n--- a/m.md\n+++ b/m.md\n@@ -1,2 +1,1 @@\n--- a/other\n b\n@@ -5 +4 @@\n-c\n+d\n",
			[]Hunk{{"m.md", 1, 1}, {"m.md", 4, 4}}},
		{"no newline at the end, then the next file", "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\ndiff --git a/b b/b\n--- a/b\n+++ b/b\n@@ -2,0 +3,2 @@\n+p\n+q\n",
			[]Hunk{{"a", 1, 1}, {"b", 3, 4}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RightHunks(tc.diff); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("RightHunks = %+v, want %+v", got, tc.want)
			}
		})
	}
}
