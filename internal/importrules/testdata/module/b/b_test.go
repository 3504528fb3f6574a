package b_test

// A test may import what its package may not.
import _ "example.com/m/a"
