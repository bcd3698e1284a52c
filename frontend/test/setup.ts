import { cleanup, configure } from "@testing-library/react";
import { afterEach } from "vitest";

// Waits on a condition (findBy*, waitFor) return as soon as it holds; their limit only bounds a
// failure. 1 s (the default) failed a page landing on a loaded CI machine: 10 s does not
// weaken any assertion, it only keeps a busy machine from failing a correct view.
configure({ asyncUtilTimeout: 10_000 });

afterEach(() => cleanup());
