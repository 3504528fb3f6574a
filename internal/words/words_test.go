package words

import (
	"reflect"
	"testing"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Plural(1, "file", "files"), "file"},
		{Plural(0, "file", "files"), "files"},
		{Count(1, "file", "files"), "1 file"},
		{Count(12, "file", "files"), "12 files"},
		{Short("0123456789abcdef"), "0123456789ab"},
		{Short("abc"), "abc"},
		{Clip("héllo", 5), "héllo"},
		{Clip("héllo wörld", 5), "héll…"},
		{Join(nil), ""},
		{Join([]string{"a"}), "a"},
		{Join([]string{"a", "b"}), "a and b"},
		{Join([]string{"a", "b", "c"}), "a, b and c"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		output string
		n      int
		want   []string
		cut    int
	}{
		{"a\nb\nc\n\n", 2, []string{"b", "c"}, 1},
		{"a\nb", 5, []string{"a", "b"}, 0},
		{"", 3, []string{""}, 0},
		{"a\n\nb", 2, []string{"", "b"}, 1},
	} {
		lines, cut := LastLines(tc.output, tc.n)
		if !reflect.DeepEqual(lines, tc.want) || cut != tc.cut {
			t.Errorf("LastLines(%q, %d) = %q, %d; want %q, %d", tc.output, tc.n, lines, cut, tc.want, tc.cut)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"fix", "", 3}, {"", "fix", 3}, {"fix", "fix", 0},
		{"stauts", "status", 2}, {"cancle", "cancel", 2}, {"hlep", "help", 2}, {"kitten", "sitting", 3},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
