package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/testimage"
)

var (
	tinyPNG  = testimage.PNG(2, 2)
	tinyJPEG = testimage.JPEG(2, 2)
)

func briefWithImages(vision bool, imgs ...pullwright.Image) pullwright.Brief {
	b := testBrief
	b.Limits = pullwright.Limits{Model: "test-model", Profile: pullwright.ModelProfile{Images: vision}}
	b.Images = imgs
	b.ImagesLeftOut = []string{"image 3 of the issue's body: it is on a site that is not GitHub's, which the bot does not fetch from"}
	return b
}

// The pictures of the brief reach a model that takes images as image
// parts of the first user message, after its text, on every call and
// after the State's round trip; the State keeps the text alone.
func TestImagesReachAVisionModel(t *testing.T) {
	dir := workspaceDir(t, map[string]string{"a.txt": "one\n"})
	s := fakellm.New(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("read_file", `{"path":"a.txt"}`)}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", `{"title":"t","summary":"s"}`)}},
	)
	a := agentFor(t, s, Config{})
	st := a.Start(briefWithImages(true,
		pullwright.Image{Where: "image 1 of the issue's body", Type: "image/png", Data: tinyPNG},
		pullwright.Image{Where: "image 1 of the maintainer's request", Type: "image/png", Data: tinyJPEG},
	))
	if err := a.Turn(context.Background(), st, dir); err != nil {
		t.Fatal(err)
	}
	st = clone(t, st)
	if st.Messages[1].Content == "" || len(st.Messages[1].MultiContent) != 0 {
		t.Fatalf("the State's first message holds more than its text: %+v", st.Messages[1].MultiContent)
	}
	if err := a.Turn(context.Background(), st, dir); err != nil {
		t.Fatal(err)
	}
	for i, req := range s.Requests() {
		first := req.Messages[1]
		if first.Content != "" || len(first.MultiContent) != 3 {
			t.Fatalf("call %d: first message %q with %d parts, want 3 parts", i+1, first.Content, len(first.MultiContent))
		}
		text := first.MultiContent[0].Text
		if !strings.Contains(text, "1. image 1 of the issue's body\n2. image 1 of the maintainer's request\n") {
			t.Errorf("call %d: the text does not list the pictures in order:\n%s", i+1, text)
		}
		if !strings.Contains(text, "- image 3 of the issue's body: it is on a site that is not GitHub's") {
			t.Errorf("call %d: the text does not say what was left out:\n%s", i+1, text)
		}
		for j, want := range []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(tinyPNG), "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(tinyJPEG)} {
			p := first.MultiContent[j+1]
			if p.Type != openai.ChatMessagePartTypeImageURL || p.ImageURL == nil || p.ImageURL.URL != want {
				t.Errorf("call %d: part %d = %+v, want the picture as %.40s…", i+1, j+2, p, want)
			}
		}
	}
}

// A model whose profile does not take images gets none, and is told in
// plain words what it is not shown and why.
func TestImagesAreNotSentToATextModel(t *testing.T) {
	st := newTestAgent(t, Config{}).Start(briefWithImages(false, pullwright.Image{Where: "image 1 of the issue's body", Type: "image/png", Data: tinyPNG}))
	if len(st.Images) != 0 {
		t.Fatalf("a text-only model's State keeps %d pictures", len(st.Images))
	}
	text := st.Messages[1].Content
	for _, want := range []string{
		"you are not given; you cannot see them",
		"- 1 picture: the model (test-model) is not set up to take images, so it was not given to you.",
		"- image 3 of the issue's body: it is on a site that is not GitHub's",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the first message lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "attached to this message") {
		t.Errorf("the first message promises pictures it does not carry")
	}
	if got := newTestAgent(t, Config{}).request(st, "test-model").Messages[1]; len(got.MultiContent) != 0 {
		t.Errorf("the request carries parts: %+v", got.MultiContent)
	}
}

// The agent bounds what its State keeps, whoever the caller is.
func TestImageBounds(t *testing.T) {
	var imgs []pullwright.Image
	for _, w := range []string{"a", "b", "c", "d", "e"} {
		imgs = append(imgs, pullwright.Image{Where: w, Type: "image/png", Data: tinyPNG})
	}
	imgs = append([]pullwright.Image{{Where: "page", Type: "image/png", Data: []byte("<html>sign in</html>")}}, imgs...)
	big := append(append([]byte(nil), tinyPNG...), bytes.Repeat([]byte{0}, maxImagesBytes)...)
	imgs = append([]pullwright.Image{{Where: "huge", Type: "image/png", Data: big}}, imgs...)
	b := briefWithImages(true, imgs...)
	b.ImagesLeftOut = nil
	keep, left := keepImages(b)
	var where []string
	for _, im := range keep {
		where = append(where, im.Where)
	}
	if strings.Join(where, ",") != "a,b,c,d" {
		t.Errorf("kept %q, want a,b,c,d", where)
	}
	want := []string{
		"huge: the pictures together would pass 8 MiB",
		"page: not a picture",
		"e: only the first 4 pictures are given",
	}
	if strings.Join(left, "\n") != strings.Join(want, "\n") {
		t.Errorf("left out:\n%s\nwant:\n%s", strings.Join(left, "\n"), strings.Join(want, "\n"))
	}
}

// An endpoint that reports no usage has the request's tokens estimated:
// a picture counts as imageBytes, not as its encoded bytes.
func TestImagesInTheEstimate(t *testing.T) {
	big := append(append([]byte(nil), tinyPNG...), bytes.Repeat([]byte{1}, 1<<20)...)
	a := newTestAgent(t, Config{})
	st := a.Start(briefWithImages(true, pullwright.Image{Where: "x", Type: "image/png", Data: big}))
	req := a.request(st, "test-model")
	withPicture := usageOf(req, openai.ChatCompletionResponse{}).prompt
	st.Images = nil
	without := usageOf(a.request(st, "test-model"), openai.ChatCompletionResponse{}).prompt
	if d := withPicture - without; d < imageBytes/bytesPerToken || d > imageBytes/bytesPerToken+100 {
		t.Errorf("a picture of 1 MiB added %d tokens to the estimate, want about %d", d, imageBytes/bytesPerToken)
	}
	if got, want := a.stateBytes(&State{Messages: st.Messages, Images: []pullwright.Image{{}, {}}}), a.requestBytes(&State{Messages: st.Messages})+2*imageBytes; got != want {
		t.Errorf("stateBytes = %d, want %d", got, want)
	}
	if _, err := json.Marshal(req); err != nil {
		t.Fatalf("the request does not encode: %v", err)
	}
}
