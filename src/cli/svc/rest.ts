// The served file's second part (see node.ts): the whole CLI, main.ts, bundled as an entry of its own.
import './main'
