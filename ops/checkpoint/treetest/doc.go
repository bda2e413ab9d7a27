// Package treetest draws random directory trees (files empty, text,
// binary and large; empty and filled directories with various modes;
// links in and out; non-UTF-8 names), writes them and describes trees bit
// for bit, for the tests of package checkpoint and of its helper endpoint.
package treetest
