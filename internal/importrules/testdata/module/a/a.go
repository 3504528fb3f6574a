// Package a keeps away from c, and reaches it through b.
//
// Import rule: none of c.
package a

import _ "example.com/m/b"
