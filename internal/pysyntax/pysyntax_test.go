package pysyntax

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		wantLine int // 0: no error expected
		wantCol  int
		wantMsg  string
	}{
		{"valid", "def f(x: int) -> int:\n    return x + 1\n", 0, 0, ""},
		{"valid modern", modern, 0, 0, ""},
		{"valid PEP 701 f-strings", "songs = ['a']\nprint(f\"{\", \".join(songs)}\")\nprint(f\"{songs[0][\"x\"] if 0 else 1}\")\n", 0, 0, ""},
		{"valid python 2 print", "print \"hello\"\n", 0, 0, ""},
		{"empty", "", 0, 0, ""},
		{"missing colon", "import os\n\ndef f(x)\n    return x\n", 3, 1, "invalid syntax near \"def f(x)\""},
		{"stray operator", "x = 1\ny = = 2\n", 2, 5, "invalid syntax near \"=\""},
		{"unclosed bracket", "a = [1, 2\nb = 3\n", 1, 3, "invalid syntax near \"= [1, 2\""},
		{"missing close paren", "print(f(1)\n", 1, 1, "invalid syntax near \"print(f(1)\""},
		{"column in characters", "s = 'é'\né = = 1\n", 2, 5, "invalid syntax near \"=\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Check(context.Background(), []byte(tt.src))
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if tt.wantLine == 0 {
				if e != nil {
					t.Fatalf("Check = %+v, want no error", *e)
				}
				return
			}
			if e == nil {
				t.Fatalf("Check = nil, want an error at line %d", tt.wantLine)
			}
			if e.Line != tt.wantLine || e.Column != tt.wantCol || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("Check = %+v, want line %d, column %d, message with %q", *e, tt.wantLine, tt.wantCol, tt.wantMsg)
			}
		})
	}
}

// modern is valid Python 3.12 that an older parser (gpython's, 3.4) refuses.
const modern = `from __future__ import annotations
import asyncio
from dataclasses import dataclass, field

type Pair[T] = tuple[T, T]

class Box[T: (int, str)]:
    def __init__(self, v: T, /, *, label: str = "") -> None:
        self.v = v

def first[T, *Ts, **P](xs: list[T]) -> T | None:
    return xs[0] if xs else None

@dataclass(frozen=True, slots=True)
class Point:
    x: float = 0.0
    y: float = field(default=0.0)

async def main(urls: list[str]) -> dict[str, int]:
    async with asyncio.timeout(10):
        results = [await fetch(u) async for u in aiter(urls)]
    if (n := len(results)) > 10:
        print(f"{n=} {results[0]!r:>10} {'nested'} {f'{n:{n}}'}")
    match results:
        case [Point(x=0, y=y), *rest] if y > 0:
            pass
        case {"a": 1, **kw}:
            pass
        case str() | bytes():
            pass
        case _:
            pass
    try:
        raise ExceptionGroup("x", [ValueError()])
    except* ValueError as eg:
        del eg
    with (open("a") as f, open("b") as g):
        pass
    return {k: v for k, v in zip(urls, results, strict=True)}
`

// TestCheckConcurrent: checks share one compiled module and run at once.
func TestCheckConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			src := fmt.Sprintf("x = %d\ny = (\n", i)
			e, err := Check(context.Background(), []byte(src))
			if err != nil || e == nil || e.Line != 2 {
				errs <- fmt.Errorf("check %d: %+v, %v", i, e, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCheckCancelled: a check whose context is done stops and says the
// source was not checked, rather than reporting on it.
func TestCheckCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e, err := Check(ctx, []byte(strings.Repeat("x = [1, 2, 3]\n", 10000)))
	if e != nil || err == nil {
		t.Fatalf("Check(cancelled) = %+v, %v; want nil and an error", e, err)
	}
}

// TestCheckBounded: a source that cannot be parsed within its time or size
// bound is reported as not checked, not as valid or invalid.
func TestCheckBounded(t *testing.T) {
	big := []byte(strings.Repeat("x = [1, 2, 3]\n", 70000)) // under MaxSource, seconds of work
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if e, err := Check(ctx, big); e != nil || !errors.Is(err, ErrUnchecked) {
		t.Errorf("Check(short deadline) = %+v, %v; want nil and ErrUnchecked", e, err)
	}
	huge := []byte(strings.Repeat("x = 1\n", MaxSource/6+1))
	if e, err := Check(context.Background(), huge); e != nil || !errors.Is(err, ErrUnchecked) {
		t.Errorf("Check(over MaxSource) = %+v, %v; want nil and ErrUnchecked", e, err)
	}
}

func BenchmarkCheck(b *testing.B) {
	var src strings.Builder
	for i := range 2000 / 8 {
		fmt.Fprintf(&src, "def f%d(xs: list[int], s: str) -> str:\n    \"\"\"Formats a value.\"\"\"\n    if not xs:\n        raise ValueError(f\"empty {s}\")\n    total = sum(x + %d for x in xs)\n    return f\"{total}: {s!r}\"\n\n\n", i, i)
	}
	data := []byte(src.String())
	if e, err := Check(context.Background(), data); e != nil || err != nil {
		b.Fatalf("benchmark input: %+v, %v", e, err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Check(context.Background(), data)
	}
}
