// Package g keeps its rule.
//
// Import rule: none of a or d.
package g

import _ "example.com/m/c"
