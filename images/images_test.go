package images_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/images"
	"github.com/pullwright/pullwright/internal/testimage"
	"github.com/pullwright/pullwright/untrusted"
)

func urls(refs []images.Ref) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.URL)
	}
	return out
}

func TestFind(t *testing.T) {
	const a = "https://github.com/user-attachments/assets/0b6c4e1e-5a8c-4e4b-9d51-0a1f0c6f2a11"
	const p = "https://private-user-images.githubusercontent.com/1/2-3.png?jwt=x.y.z"
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"markdown image", "Broken:\n\n![screenshot](" + a + ")\n", []string{a}},
		{"markdown image with a title", `![s](https://github.com/x.png "the title")`, []string{"https://github.com/x.png"}},
		{"markdown image in angle brackets", "![s](<https://github.com/a b.png>)", []string{"https://github.com/a%20b.png"}},
		{"alt text with brackets", "![a [b] c](https://github.com/x.png)", []string{"https://github.com/x.png"}},
		{"img tag as GitHub writes it", `<img width="812" alt="Screenshot" src="` + a + `" />`, []string{a}},
		{"img tag, single quotes, upper case", `<IMG SRC='` + p + `'>`, []string{p}},
		{"img tag, unquoted src", `<img src=https://github.com/x.png>`, []string{"https://github.com/x.png"}},
		{"img tag with an entity", `<img src="https://github.com/x.png?a=1&amp;b=2">`, []string{"https://github.com/x.png?a=1&b=2"}},
		{"bare attachment on its own line", "It fails:\n" + a + "\nthen", []string{a}},
		{"bare attachment at the end of a sentence", "see " + a + ".", []string{a}},
		{"a link to an attachment is not an image", "[the log](" + a + ")", nil},
		{"a bare link elsewhere is not an image", "see https://github.com/o/r/issues/1", nil},
		{"in order, each once", "![1](https://github.com/1.png) <img src=\"https://github.com/2.png\"> ![again](https://github.com/1.png)",
			[]string{"https://github.com/1.png", "https://github.com/2.png"}},
		{"other hosts are found: the fetcher refuses them", "![x](https://example.com/x.png)", []string{"https://example.com/x.png"}},
		{"relative and data URLs are not", "![x](/x.png) ![y](data:image/png;base64,AAAA) <img src=\"javascript:alert(1)\">", nil},
		{"fenced code is text", "```\n![x](https://github.com/x.png)\n```\n~~~~md\n<img src=\"https://github.com/y.png\">\n~~~~\n", nil},
		{"after a fence", "```\ncode\n```\n![x](https://github.com/x.png)", []string{"https://github.com/x.png"}},
		{"a code span is text", "write `![x](https://github.com/x.png)` or ``<img src=\"https://github.com/y.png\">``", nil},
		{"an unclosed backtick is literal", "it's ` odd ![x](https://github.com/x.png)", []string{"https://github.com/x.png"}},
		{"not an image: a link", "[x](https://github.com/x.png)", nil},
		{"unfinished markup", "![x](https://github.com/x.png <img src=\"https://github.com/y.png", nil},
		{"details are visible", "<details><summary>shot</summary>\n\n![x](https://github.com/x.png)\n</details>", []string{"https://github.com/x.png"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := urls(images.Find(tc.text)); !slices.Equal(got, tc.want) {
				t.Errorf("Find(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

// What a person does not see holds no image once untrusted.Visible has
// read the text, as task does before Find.
func TestHiddenImagesAreNotFound(t *testing.T) {
	for _, text := range []string{
		"<!-- ![x](https://github.com/x.png) -->",
		"<!--\n<img src=\"https://github.com/x.png\">\n-->",
		`<div hidden><img src="https://github.com/x.png"></div>`,
		`<span style="display:none">![x](https://github.com/x.png)</span>`,
		"<!-- unterminated ![x](https://github.com/x.png)",
	} {
		if got := images.Find(untrusted.Visible(text)); len(got) != 0 {
			t.Errorf("Find(Visible(%q)) = %q, want none", text, urls(got))
		}
	}
	if got := images.Find(untrusted.Visible("![shown](https://github.com/x.png)")); len(got) != 1 {
		t.Errorf("a visible image was lost: %q", urls(got))
	}
}

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"png", testimage.PNG(3, 2), "image/png"},
		{"jpeg", testimage.JPEG(2, 3), "image/jpeg"},
		{"gif", testimage.GIF(2, 2), "image/gif"},
		{"webp", testimage.WebP(640, 480), "image/webp"},
		// A broken header would make the endpoint refuse the request;
		// a one-pixel image is a beacon.
		{"png's magic alone", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), ""},
		{"jpeg's magic alone", []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), ""},
		{"webp's magic alone", []byte("RIFF\x24\x00\x00\x00WEBPVP8 "), ""},
		{"a one-pixel png", testimage.PNG(1, 1), ""},
		{"a one-pixel-high gif", testimage.GIF(300, 1), ""},
		{"a one-pixel webp", testimage.WebP(1, 1), ""},
		{"html", []byte("<!DOCTYPE html><html><body>Sign in</body></html>"), ""},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), ""},
		{"mp4", append([]byte("\x00\x00\x00\x18ftypmp42"), bytes.Repeat([]byte{0}, 8)...), ""},
		{"empty", nil, ""},
		{"text", []byte(strings.Repeat("a", 600)), ""},
	} {
		got, ok := images.Kind(tc.b)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: Kind = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}

func FuzzFind(f *testing.F) {
	for _, s := range []string{
		"![a](https://github.com/x.png)", `<img src="https://github.com/x.png">`, "https://github.com/user-attachments/assets/1",
		"```\n![a](https://github.com/x.png)\n```", "``![a](https://x)``", "![a [b](https://x) <img src='", "<img src=>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		refs := images.Find(s)
		seen := map[string]bool{}
		for _, r := range refs {
			if !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "https://") {
				t.Fatalf("Find(%q) returned %q, not an absolute http(s) URL", s, r.URL)
			}
			if seen[r.URL] {
				t.Fatalf("Find(%q) returned %q twice", s, r.URL)
			}
			seen[r.URL] = true
		}
		if len(refs) > len(s)/8+1 {
			t.Fatalf("Find(%q) found %d images in %d bytes", s, len(refs), len(s))
		}
	})
}

// hostileInputs are texts full of markup that never ends, as long as an
// issue body may be (65,536 characters): anyone can write one.
var hostileInputs = map[string]string{
	"image openers":        strings.Repeat("![", 1<<15),
	"nested alt text":      strings.Repeat("![a [", 1<<14),
	"img tags without end": strings.Repeat("<img src=\"https://github.com/", 1<<11),
	"unclosed images":      strings.Repeat("![a](https://github.com/", 1<<11),
	"code span openers":    strings.Repeat("``", 1<<15),
	"bare links":           strings.Repeat("https://github.com/user-attachments/assets/", 1<<10),
}

// TestFindOnHostileText: each piece of markup is read within a bounded
// window, so these take time in proportion to their length; a return to
// quadratic time shows as the package's test timeout here, and as a ratio
// in the hundreds in BenchmarkFindHostile.
func TestFindOnHostileText(t *testing.T) {
	for name, in := range hostileInputs {
		t.Run(name, func(t *testing.T) {
			if got := images.Find(in); len(got) > 1 {
				t.Errorf("found %d images", len(got))
			}
		})
	}
}

// BenchmarkFindHostile times Find on each hostile text and on ordinary
// text of the same length, and reports the ratio:
//
//	go test ./images -run '^$' -bench FindHostile
func BenchmarkFindHostile(b *testing.B) {
	for name, in := range hostileInputs {
		ordinary := strings.Repeat("Some text with `code`, ![a picture](https://github.com/x.png) and a [link](x). ", len(in)/70+1)[:len(in)]
		b.Run(name, func(b *testing.B) {
			var hostile, floor time.Duration
			for b.Loop() {
				start := time.Now()
				images.Find(ordinary)
				floor += time.Since(start)
				start = time.Now()
				images.Find(in)
				hostile += time.Since(start)
			}
			b.ReportMetric(float64(hostile)/float64(floor), "x-ordinary")
		})
	}
}
