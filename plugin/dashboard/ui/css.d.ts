// esbuild loads the stylesheet as text (assets.ts: loader '.css': 'text'); app.ts puts it in a <style> element.
declare module '*.css' {
  const text: string;
  export default text;
}
