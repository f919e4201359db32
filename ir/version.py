"""The compiler's version, named by the package, ICE reports and the manifest."""

VERSION = "0.1.0"
