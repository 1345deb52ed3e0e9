// One bundle per task: every src/tasks/<task>/index.jsx becomes build/<task>/bundle.js.
// CSS is bundled (style-loader) so worker pages never fetch from a CDN.
const fs = require("fs");
const path = require("path");

const tasksDir = path.resolve(__dirname, "src/tasks");
const entry = {};
for (const task of fs.readdirSync(tasksDir)) {
  const index = path.join(tasksDir, task, "index.jsx");
  if (fs.existsSync(index)) {
    entry[task] = index;
  }
}

module.exports = {
  entry,
  output: {
    path: path.resolve(__dirname, "build"),
    filename: "[name]/bundle.js",
  },
  resolve: {
    extensions: [".js", ".jsx"],
    alias: {
      // One React and one mephisto-task for every package (bootstrap-chat peer-depends on both).
      react: path.resolve(__dirname, "node_modules/react"),
      "react-dom": path.resolve(__dirname, "node_modules/react-dom"),
      "mephisto-task": path.resolve(__dirname, "node_modules/mephisto-task"),
    },
    fallback: { net: false, dns: false },
  },
  performance: { hints: false },
  module: {
    rules: [
      {
        test: /\.jsx?$/,
        exclude: /node_modules/,
        loader: "babel-loader",
        options: { presets: ["@babel/preset-env", "@babel/preset-react"] },
      },
      { test: /\.css$/, use: ["style-loader", "css-loader"] },
      { test: /\.(svg|png|jpe?g|gif|ttf|woff2?|eot)$/, type: "asset/inline" },
    ],
  },
};
