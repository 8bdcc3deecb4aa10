#!/bin/sh
# The README's settings table is the one mpizip-info generates from src/core/settings.def.
# To refresh it: mpizip-info --settings-markdown, pasted between the settings markers.
set -u
readme="$MPIZIP_SRCDIR/README.md"
want=$("$MPIZIP_BUILDDIR/tools/mpizip-info" --settings-markdown)
have=$(sed -n '/<!-- settings:begin -->/,/<!-- settings:end -->/p' "$readme" | sed '1d;$d')
if [ "$want" != "$have" ]; then
  echo "README settings table is stale; expected:" >&2
  echo "$want" >&2
  exit 1
fi
