// Package b may reach c alone, and does.
//
// Import rule: only c.
package b

import _ "example.com/m/c"
