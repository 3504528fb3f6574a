package runner

import (
	"reflect"
	"strings"
	"testing"
)

// The loaders' lists, glibc's and musl's, give the libraries to copy by
// the names the program asks for; what cannot be copied is an error.
func TestParseLoaderList(t *testing.T) {
	cases := []struct {
		name, out string
		want      []Library
		wantErr   string
	}{
		{name: "glibc", out: "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1a)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f1b)\n",
			want: []Library{{"libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"}, {"/lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2"}}},
		{name: "musl", out: "\t/lib/ld-musl-x86_64.so.1 (0x7f94)\n\tlibc.so => /lib/ld-musl-x86_64.so.1 (0x7f94)\n",
			want: []Library{{"/lib/ld-musl-x86_64.so.1", "/lib/ld-musl-x86_64.so.1"}, {"libc.so", "/lib/ld-musl-x86_64.so.1"}}},
		{name: "older glibc's vdso", out: "\tlinux-vdso.so.1 =>  (0x00007ffd)\n\tlibpthread.so.0 => /lib64/libpthread.so.0 (0x00007f1a)\n",
			want: []Library{{"libpthread.so.0", "/lib64/libpthread.so.0"}}},
		{name: "not found", out: "\tlibc.so.6 => /lib/libc.so.6 (0x1)\n\tlibfoo.so.1 => not found\n\tlibbar.so => not found\n", wantErr: "not found on this host: libfoo.so.1, libbar.so"},
		{name: "statically linked", out: "\tstatically linked\n", wantErr: `printed "statically linked"`},
		{name: "a relative path", out: "\tlibc.so.6 => lib/libc.so.6 (0x1)\n", wantErr: "printed"},
		{name: "nothing", out: "\n", wantErr: "listed none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseLoaderList(c.out)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("= %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// A static forwarder starts as it is; a dynamic one through the copied
// loader, which finds the copied libraries first.
func TestForwarderCommand(t *testing.T) {
	if got, want := (Forwarder{Program: "/bot"}).command(), []string{"/.pullwright/bot", "fence-forward"}; !reflect.DeepEqual(got, want) {
		t.Errorf("static: %q, want %q", got, want)
	}
	dyn := Forwarder{Program: "/bot", Interpreter: "/lib64/ld-linux-x86-64.so.2", Libraries: []Library{{"libc.so.6", "/lib/libc.so.6"}}}
	want := []string{"/.pullwright/lib/ld-linux-x86-64.so.2", "--library-path", "/.pullwright/lib", "/.pullwright/bot", "fence-forward"}
	if got := dyn.command(); !reflect.DeepEqual(got, want) {
		t.Errorf("dynamic: %q, want %q", got, want)
	}
}
