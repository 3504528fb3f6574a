package ghapp

import (
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-github/v88/github"
)

func TestEachPage(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		pages     int // GitHub has pages 1..pages
		want      int // read wants no more after this many pages (0: all)
		failAt    int
		wantAsked []int
		wantRest  bool
		wantErr   error
	}{
		{name: "one page", pages: 1, wantAsked: []int{0}},
		{name: "all pages", pages: 3, wantAsked: []int{0, 2, 3}},
		{name: "stops early", pages: 3, want: 2, wantAsked: []int{0, 2}, wantRest: true},
		{name: "stops on the last page", pages: 2, want: 2, wantAsked: []int{0, 2}},
		{name: "error", pages: 3, failAt: 2, wantAsked: []int{0, 2}, wantErr: boom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := &github.ListOptions{}
			var asked []int
			rest, err := eachPage(opts, func() (*github.Response, bool, error) {
				asked = append(asked, opts.Page)
				if len(asked) == tc.failAt {
					return nil, false, boom
				}
				resp := &github.Response{}
				if len(asked) < tc.pages {
					resp.NextPage = len(asked) + 1
				}
				return resp, tc.want == 0 || len(asked) < tc.want, nil
			})
			if !reflect.DeepEqual(asked, tc.wantAsked) || rest != tc.wantRest || !errors.Is(err, tc.wantErr) {
				t.Errorf("asked %v, rest %v, err %v; want %v, %v, %v", asked, rest, err, tc.wantAsked, tc.wantRest, tc.wantErr)
			}
		})
	}
}
