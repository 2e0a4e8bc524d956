// eslint with typescript-eslint's type-aware recommended rules over the SDK's own sources; the
// code generated from proto/ (src/gen) is buf's and is not linted.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "src/gen/"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ["eslint.config.js"] }, tsconfigRootDir: import.meta.dirname },
    },
  },
  // node:test's describe and test return promises the runner itself awaits.
  { files: ["src/test/**/*.ts"], rules: { "@typescript-eslint/no-floating-promises": "off" } },
);
