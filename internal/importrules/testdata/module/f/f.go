// Package f says its rule in prose. It must not import a.
package f
