// check.c: the whole of what the WebAssembly module does. It parses Python
// with tree-sitter's runtime and tree-sitter-python's grammar and tells where
// the first syntax error is; build.sh compiles it, with both, to check.wasm.
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "tree_sitter/api.h"

const TSLanguage *tree_sitter_python(void);

// The host writes the source into memory it asks for here.
void *pc_alloc(uint32_t n) { return malloc(n ? n : 1); }
void pc_free(void *p) { free(p); }

// first_error finds, in source order, the first ERROR or MISSING node under n.
static int first_error(TSNode n, TSNode *out) {
	if (ts_node_is_error(n) || ts_node_is_missing(n)) {
		*out = n;
		return 1;
	}
	uint32_t count = ts_node_child_count(n);
	for (uint32_t i = 0; i < count; i++) {
		TSNode c = ts_node_child(n, i);
		if (ts_node_has_error(c) && first_error(c, out)) {
			return 1;
		}
	}
	return 0;
}

typedef struct {
	const char *src;
	uint32_t len;
	uint64_t deadline_ns;
} job;

static const char *read_input(void *payload, uint32_t byte, TSPoint at, uint32_t *n) {
	(void)at;
	job *j = payload;
	if (byte >= j->len) {
		*n = 0;
		return "";
	}
	*n = j->len - byte;
	return j->src + byte;
}

static uint64_t now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

// over_time stops the parse at the deadline (the host's monotonic clock).
static bool over_time(TSParseState *state) {
	job *j = state->payload;
	return now_ns() > j->deadline_ns;
}

// pc_check parses len bytes at src, for at most timeout_ms milliseconds. It returns -1 when the parser could not
// be set up, 0 when the source parses, and 1 when it does not, with out[0] the
// 0-based row, out[1] the 0-based byte column, out[2] 1 for an unexpected
// part (ERROR) or 2 for a missing token (MISSING), out[3] the address of the
// NUL-terminated name of the missing token, and out[4] and out[5] the start
// and end bytes of the node.
int32_t pc_check(const char *src, uint32_t len, uint32_t *out, uint32_t timeout_ms) {
	TSParser *p = ts_parser_new();
	if (p == NULL || !ts_parser_set_language(p, tree_sitter_python())) {
		return -1;
	}
	job j = {src, len, now_ns() + (uint64_t)timeout_ms * 1000000u};
	TSInput in = {&j, read_input, TSInputEncodingUTF8, NULL};
	TSParseOptions opts = {&j, over_time};
	TSTree *t = ts_parser_parse_with_options(p, NULL, in, opts);
	if (t == NULL) {
		ts_parser_delete(p);
		return -2;
	}
	int32_t found = 0;
	TSNode root = ts_tree_root_node(t);
	TSNode e;
	if (ts_node_has_error(root) && first_error(root, &e)) {
		TSPoint at = ts_node_start_point(e);
		out[0] = at.row;
		out[1] = at.column;
		out[2] = ts_node_is_missing(e) ? 2 : 1;
		out[3] = (uint32_t)(uintptr_t)ts_node_type(e);
		out[4] = ts_node_start_byte(e);
		out[5] = ts_node_end_byte(e);
		found = 1;
	}
	ts_tree_delete(t);
	ts_parser_delete(p);
	return found;
}
