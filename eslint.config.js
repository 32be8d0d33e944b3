// `npm run lint`, part 5: ESLint with typescript-eslint's type-aware rules over the TypeScript
// sources. The compiler already checks types and unused names (scripts/lint-unused.mjs); what
// it cannot see is a promise nobody awaits or handles, and a promise passed where a callback
// that returns nothing is expected (an event listener, a timer): both lose errors silently,
// and a lost error in a broker is a hung request or an unhandled rejection that ends the
// process. Formatting is Prettier's (.prettierrc.json), not ESLint's.
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['dist/**', 'build/**', 'node_modules/**', 'test/fixtures/**', '**/*.js', '**/*.mjs', '**/*.cjs']},
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: {project: './tsconfig.lint.json', tsconfigRootDir: import.meta.dirname},
    },
    plugins: {'@typescript-eslint': tseslint.plugin},
    linterOptions: {reportUnusedDisableDirectives: 'error'},
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it/test return promises the runner itself awaits.
          allowForKnownSafeCalls: [
            {from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach']},
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
)
