// Package e names a package the module does not have.
//
// Import rule: none of x.
package e
