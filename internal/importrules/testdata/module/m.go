// Package m is the root: it states that it is a leaf, and is not.
//
// Import rule: no package of this module.
package m

import _ "example.com/m/c"
