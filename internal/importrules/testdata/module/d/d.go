// Package d may reach b alone, and b reaches c.
//
// Import rule: only b.
package d

import _ "example.com/m/b"
