package stats

import (
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	// Out of order, to see it sorts a copy.
	d := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {0.50, 5}, {0.99, 10}, {1, 10}} {
		if got := Percentile(d, tc.p); got != tc.want {
			t.Errorf("Percentile(%v) = %d, want %d", tc.p, got, tc.want)
		}
	}
	if d[0] != 5 {
		t.Errorf("Percentile sorted its argument: %v", d)
	}
	if got := Percentile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("Percentile of one value = %d, want 7", got)
	}
}

func TestMedian(t *testing.T) {
	if got := Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("Median of an odd count = %v, want 2", got)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("Median of an even count = %v, want 2.5", got)
	}
}

func TestDur(t *testing.T) {
	for _, tc := range []struct {
		seconds float64
		want    string
	}{
		{0.0123456, "12.3ms"},
		{0.00123456, "1.23ms"},
		{0.000123456, "123µs"},
		{1.234567, "1.2346s"},
	} {
		if got := Dur(tc.seconds); got != tc.want {
			t.Errorf("Dur(%v) = %q, want %q", tc.seconds, got, tc.want)
		}
	}
}

func TestTableAlignsRight(t *testing.T) {
	var b strings.Builder
	tb := NewTable(&b)
	tb.Row("name", "n")
	tb.Row("a", "100")
	tb.Flush()
	want := "  name    n\n     a  100\n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
}
