// Package layering holds a test, run by `make lint`, that keeps the package table of
// docs/design.md ("## Packages") and the imports of the code in agreement. The table is read as
// data: its first column names each package of the module in backticks, and its imports column
// names in backticks the packages of the module that the package may import (every other word
// there is prose). Each package gets a level: 0 when its row names no import, else one more than
// the highest level among the packages its row names.
//
// The test fails when a package imports a package of the module that its row does not name (the
// message says which package imports what, what the row allows and whether the import points up,
// sideways or down), when a package of the module has no row, when a row names a package that does
// not exist, or when the rows' imports form a cycle. It checks the imports of non-test files, as
// `go list` reports them.
//
// size_test.go holds the other house rule `make lint` checks: no hand-written Go or Python file of
// the module (tests included) has more than MaxLines lines; a generated file says so ("DO NOT
// EDIT") and is exempt.
package layering
