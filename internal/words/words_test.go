package words

import "testing"

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
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
