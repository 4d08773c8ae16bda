// Loaded before every test file (bunfig.toml preload): a hook here runs once, after the whole run.
import { afterAll } from 'bun:test'
import { dropMadeDatabases } from './postgres'

afterAll(dropMadeDatabases, 120_000)
