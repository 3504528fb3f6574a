// Package stats holds how the benchmark programs reduce and show their
// figures: the nearest-rank percentile, the median over rounds, durations
// rounded for reading and the right-aligned table. They share it so that a
// p99 or a median means the same in every program's report, and two of
// them can be read side by side.
package stats

import (
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Percentile is the p-quantile of d by nearest rank, so that it is always
// one of the measured values and never an interpolation between two; 1 is
// the max. d is left as it was.
func Percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[max(0, min(len(s)-1, int(p*float64(len(s))+0.5)-1))]
}

// Median is the middle of v, or the mean of the two middle values when
// their count is even: the programs take it over rounds, since on a shared
// and noisy machine one slow round should not move the figure. v is left
// as it was.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Dur shows a duration given in seconds to about three significant
// digits: the noise of a shared machine is larger than the rest, and
// time.Duration's nanoseconds would only make the columns harder to read.
func Dur(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second))
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// Table prints rows of cells in right-aligned columns, so that figures of
// different sizes line up by their last digit. Every cell is ended by a
// tab, the last one too: tabwriter aligns only the cells a tab ends.
type Table struct{ tw *tabwriter.Writer }

// NewTable is a table written to w when it is flushed.
func NewTable(w io.Writer) *Table {
	return &Table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)}
}

// Row adds a row; an empty cell leaves a gap between groups of columns.
func (t *Table) Row(cells ...string) {
	io.WriteString(t.tw, strings.Join(cells, "\t")+"\t\n")
}

// Flush writes the rows, aligned.
func (t *Table) Flush() error { return t.tw.Flush() }
