// Bundle stand-in for tinyglobby: oclif globs only to discover command files on disk
// ("pattern" discovery); meta lists its commands explicitly (src/commands.ts), so the glob is
// never called, and loading tinyglobby (with picomatch and fdir) cost every start.
export async function glob() {
  throw new Error('command discovery by file pattern is not used by meta: commands are listed in src/commands.ts')
}
