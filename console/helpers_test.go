package console

import (
	"slices"
	"strconv"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
