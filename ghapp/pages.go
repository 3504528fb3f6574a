package ghapp

import "github.com/google/go-github/v88/github"

// eachPage reads a REST listing page by page, from the page opts names on.
// read asks GitHub for that page (through whichever options embed opts)
// and keeps what it wants of it, saying whether it wants the next page.
// eachPage stops at the last page, at read's first error, or when read
// wants no more; rest then says GitHub had pages that were not read, which
// a caller that bounds its reading may want to log or report.
func eachPage(opts *github.ListOptions, read func() (resp *github.Response, more bool, err error)) (rest bool, err error) {
	for {
		resp, more, err := read()
		if err != nil {
			return false, err
		}
		if resp.NextPage == 0 {
			return false, nil
		}
		if !more {
			return true, nil
		}
		opts.Page = resp.NextPage
	}
}
