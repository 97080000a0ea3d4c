/**
 * CSS colour validation without a browser, so `vid validate` and the server can check
 * `color` variables before anything renders. Accepts the syntaxes of CSS Color 4:
 * hex, named colours, and the functional notations.
 *
 * @module
 */

const NAMED_COLORS: ReadonlySet<string> = new Set(
  (
    "aliceblue antiquewhite aqua aquamarine azure beige bisque black blanchedalmond blue " +
    "blueviolet brown burlywood cadetblue chartreuse chocolate coral cornflowerblue cornsilk " +
    "crimson cyan darkblue darkcyan darkgoldenrod darkgray darkgreen darkgrey darkkhaki " +
    "darkmagenta darkolivegreen darkorange darkorchid darkred darksalmon darkseagreen " +
    "darkslateblue darkslategray darkslategrey darkturquoise darkviolet deeppink deepskyblue " +
    "dimgray dimgrey dodgerblue firebrick floralwhite forestgreen fuchsia gainsboro ghostwhite " +
    "gold goldenrod gray green greenyellow grey honeydew hotpink indianred indigo ivory khaki " +
    "lavender lavenderblush lawngreen lemonchiffon lightblue lightcoral lightcyan " +
    "lightgoldenrodyellow lightgray lightgreen lightgrey lightpink lightsalmon lightseagreen " +
    "lightskyblue lightslategray lightslategrey lightsteelblue lightyellow lime limegreen linen " +
    "magenta maroon mediumaquamarine mediumblue mediumorchid mediumpurple mediumseagreen " +
    "mediumslateblue mediumspringgreen mediumturquoise mediumvioletred midnightblue mintcream " +
    "mistyrose moccasin navajowhite navy oldlace olive olivedrab orange orangered orchid " +
    "palegoldenrod palegreen paleturquoise palevioletred papayawhip peachpuff peru pink plum " +
    "powderblue purple rebeccapurple red rosybrown royalblue saddlebrown salmon sandybrown " +
    "seagreen seashell sienna silver skyblue slateblue slategray slategrey snow springgreen " +
    "steelblue tan teal thistle tomato turquoise violet wheat white whitesmoke yellow " +
    "yellowgreen transparent"
  ).split(" "),
);

const COLOR_FUNCTIONS: ReadonlySet<string> = new Set([
  "rgb",
  "rgba",
  "hsl",
  "hsla",
  "hwb",
  "lab",
  "lch",
  "oklab",
  "oklch",
]);

const COLOR_SPACES: ReadonlySet<string> = new Set([
  "srgb",
  "srgb-linear",
  "display-p3",
  "a98-rgb",
  "prophoto-rgb",
  "rec2020",
  "xyz",
  "xyz-d50",
  "xyz-d65",
]);

function isHex(text: string): boolean {
  if (!text.startsWith("#")) return false;
  const digits = text.slice(1);
  if (![3, 4, 6, 8].includes(digits.length)) return false;
  for (const ch of digits.toLowerCase()) {
    if (!"0123456789abcdef".includes(ch)) return false;
  }
  return true;
}

/** Functions that also accept the legacy comma-separated syntax. */
const LEGACY_COMMA_FUNCTIONS: ReadonlySet<string> = new Set(["rgb", "rgba", "hsl", "hsla"]);

/** A CSS `<number>`: decimal, optional sign and exponent (no hex, no `Infinity`). */
const CSS_NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/;

/** A number with an optional unit (`%`, `deg`, `rad`, `grad`, `turn`), or `none`. */
function isComponent(token: string): boolean {
  if (token === "none") return true;
  let numberPart = token;
  for (const unit of ["%", "deg", "grad", "rad", "turn"]) {
    if (token.endsWith(unit)) {
      numberPart = token.slice(0, -unit.length);
      break;
    }
  }
  return CSS_NUMBER.test(numberPart);
}

/**
 * Splits a function body into channels and alpha: modern `1 2 3 / 0.5` (alpha only after
 * the slash) or, when `allowCommas`, legacy `1, 2, 3, 0.5`. Null when malformed.
 */
function components(
  body: string,
  allowCommas: boolean,
): { channels: string[]; alpha: string | null } | null {
  const slash = body.split("/");
  if (slash.length > 2) return null;
  if (slash[0].includes(",")) {
    if (!allowCommas || slash.length === 2) return null;
    const parts = slash[0].split(",").map((s) => s.trim());
    if (parts.some((s) => s === "") || parts.length > 4) return null;
    return { channels: parts.slice(0, 3), alpha: parts[3] ?? null };
  }
  const channels = slash[0].trim().split(/\s+/);
  if (channels[0] === "") return null;
  if (slash.length === 1) return { channels, alpha: null };
  const alpha = slash[1].trim();
  if (alpha === "" || /\s/.test(alpha)) return null;
  return { channels, alpha };
}

/**
 * Whether `text` is a valid CSS colour value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(isCssColor("#ff0066"), true);
 * assert.equal(isCssColor("rgb(0 128 255 / 50%)"), true);
 * assert.equal(isCssColor("blurple"), false);
 * ```
 */
export function isCssColor(text: string): boolean {
  const value = text.trim().toLowerCase();
  if (value === "") return false;
  if (isHex(value)) return true;
  if (NAMED_COLORS.has(value) || value === "currentcolor") return true;
  const open = value.indexOf("(");
  if (open <= 0 || !value.endsWith(")")) return false;
  const fn = value.slice(0, open);
  const body = value.slice(open + 1, -1);
  if (fn === "color") {
    const parts = components(body, false);
    if (!parts || parts.channels.length !== 4) return false;
    return COLOR_SPACES.has(parts.channels[0]) && parts.channels.slice(1).every(isComponent) &&
      (parts.alpha === null || isComponent(parts.alpha));
  }
  if (!COLOR_FUNCTIONS.has(fn)) return false;
  const parts = components(body, LEGACY_COMMA_FUNCTIONS.has(fn));
  return parts !== null && parts.channels.length === 3 && parts.channels.every(isComponent) &&
    (parts.alpha === null || isComponent(parts.alpha));
}
