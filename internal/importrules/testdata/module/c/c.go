// Package c has no rule in its package comment.
package c

// Import rule: none of a.
var _ = 0
