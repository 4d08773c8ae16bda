// Two-factor tokens in from other authenticator apps (paste, a file, or a QR code image
// decoded here in the browser with jsQR: the image itself never leaves the page) and out to them
// (otpauth:// links, an Aegis vault, or Google Authenticator QR codes drawn here with uqr).
// Both libraries load only when used: the first load of the page stays small.
import { useEffect, useState } from 'preact/hooks'
import { api, errorMessage } from '../api'
import { DialogActions, downloadText, Field, inputValue, Modal, toast, useSubmission } from '../ui'

interface ImportItem {
  index: number
  service: string
  accountName: string
  type: 'totp' | 'hotp' | 'steam'
}
interface ImportAnswer {
  format: string
  applied: boolean
  created: ImportItem[]
  duplicates: ImportItem[]
  refused: { index: number; service: string; accountName: string; reason: string }[]
}
interface ExportAnswer {
  format: 'otpauth' | 'aegis' | 'google-migration'
  count: number
  content: string
  skipped: { service: string; accountName: string; reason: string }[]
}

const FORMAT_NAMES: Record<string, string> = {
  'google-migration': 'Google Authenticator export',
  aegis: 'Aegis vault',
  'aegis-encrypted': 'encrypted Aegis vault',
  '2fas': '2FAS backup',
  andotp: 'andOTP / Ente list',
  otpauth: 'otpauth:// links',
}

/** Larger images are scaled down before decoding: a QR code needs far fewer pixels than a photo has. */
const MAX_DECODE_SIDE = 1600

/** The text of the QR code in an image (PNG, JPEG…), decoded here; null when none is found. */
export async function decodeQrImage(image: Blob): Promise<string | null> {
  const bitmap = await createImageBitmap(image)
  const scale = Math.min(1, MAX_DECODE_SIDE / Math.max(bitmap.width, bitmap.height))
  const width = Math.max(1, Math.round(bitmap.width * scale))
  const height = Math.max(1, Math.round(bitmap.height * scale))
  const canvas = document.createElement('canvas')
  canvas.width = width
  canvas.height = height
  const context = canvas.getContext('2d', { willReadFrequently: true })
  if (!context) return null
  context.drawImage(bitmap, 0, 0, width, height)
  bitmap.close()
  const pixels = context.getImageData(0, 0, width, height)
  const { default: jsQR } = await import('jsqr')
  return jsQR(pixels.data, width, height)?.data ?? null
}

const isImage = (file: Blob) => /^image\//.test(file.type)

const label = (item: { service: string; accountName: string }) => (item.service === item.accountName ? item.service : `${item.service} (${item.accountName})`)

export function ImportTokens(props: { onClose(): void; onImported(): void }) {
  const [content, setContent] = useState('')
  const [password, setPassword] = useState('')
  const [preview, setPreview] = useState<ImportAnswer | null>(null)
  const [note, setNote] = useState('')
  const { busy, error, setError, run } = useSubmission()
  const encrypted = /"db"\s*:\s*"/.test(content)

  const changed = (text: string) => {
    setContent(text)
    setPreview(null)
  }
  /** A QR code's text is added as a line: Google Authenticator shows one code per batch. */
  const addQr = async (image: Blob) => {
    setError(null)
    try {
      const text = await decodeQrImage(image)
      if (!text) return setError('No QR code was found in that image.')
      changed(content.trim() ? `${content.trim()}\n${text}\n` : `${text}\n`)
      setNote(`QR code read (${text.startsWith('otpauth-migration:') ? 'a Google Authenticator export' : 'a link'}); add more, or preview.`)
    } catch (failure) {
      setError(`That image could not be read: ${errorMessage(failure)}`)
    }
  }
  const onFile = async (event: Event) => {
    const input = event.currentTarget as HTMLInputElement
    const file = input.files?.[0]
    input.value = ''
    if (!file) return
    if (isImage(file)) return addQr(file)
    if (file.size > 2 * 1024 * 1024) return setError('That file is larger than the 2 MB an import accepts.')
    changed(await file.text())
    setNote(`${file.name} loaded.`)
  }
  const onPaste = (event: ClipboardEvent) => {
    const image = [...(event.clipboardData?.items ?? [])].find((item) => item.kind === 'file' && item.type.startsWith('image/'))?.getAsFile()
    if (!image) return
    event.preventDefault()
    void addQr(image)
  }
  const send = (apply: boolean) =>
    api<ImportAnswer>('POST', '/api/2fa/import', { content, ...(password ? { password } : {}), ...(apply ? { apply: true } : {}) })
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    await run(async () => {
      if (!preview) return setPreview(await send(false))
      const done = await send(true)
      toast(`Imported ${done.created.length} token${done.created.length === 1 ? '' : 's'}`)
      props.onImported()
    })
  }
  return (
    <Modal title="Import 2FA tokens" onClose={props.onClose} dirty={content !== ''}>
      <form class="stack" onSubmit={submit} autoComplete="off" onPaste={onPaste}>
        <p class="muted small">
          From Google Authenticator (its export QR codes), Aegis (plain or encrypted), 2FAS (plain), andOTP, Ente Auth (plain export) or a list of otpauth://
          links. A QR code image is read here in your browser; only the text in it is sent.
        </p>
        <Field label="Export file or text" hint="Paste the text, or a QR code image (Ctrl+V), here.">
          <textarea name="content" class="mono" rows={6} value={content} onInput={(event) => changed(inputValue(event))} spellcheck={false} />
        </Field>
        <Field label="Or choose a file" hint="A .json, .2fas or .txt export, or a PNG/JPEG picture of a QR code.">
          <input name="file" type="file" accept=".json,.2fas,.txt,text/plain,application/json,image/png,image/jpeg,image/*" onChange={onFile} />
        </Field>
        {encrypted && (
          <Field label="Password of the encrypted vault">
            <input
              name="password"
              type="password"
              autoComplete="off"
              value={password}
              onInput={(event) => {
                setPassword(inputValue(event))
                setPreview(null)
              }}
            />
          </Field>
        )}
        {note && (
          <p class="small" role="status">
            {note}
          </p>
        )}
        {preview && <ImportPreview answer={preview} />}
        <DialogActions
          error={error}
          busy={busy || content.trim() === '' || (preview !== null && preview.created.length === 0)}
          submit={preview ? `Import ${preview.created.length} token${preview.created.length === 1 ? '' : 's'}` : 'Preview'}
          onCancel={props.onClose}
        />
      </form>
    </Modal>
  )
}

function ImportPreview(props: { answer: ImportAnswer }) {
  const { answer } = props
  return (
    <div class="stack import-preview" aria-live="polite">
      <p>
        <strong>{FORMAT_NAMES[answer.format] ?? answer.format}</strong>: {answer.created.length} new, {answer.duplicates.length} already here,{' '}
        {answer.refused.length} not supported.
      </p>
      {answer.created.length > 0 && (
        <ul class="small preview-created">
          {answer.created.map((item) => (
            <li key={item.index}>
              {label(item)}
              {item.type !== 'totp' && <span class="muted"> · {item.type === 'hotp' ? 'counter-based' : 'Steam Guard'}</span>}
            </li>
          ))}
        </ul>
      )}
      {answer.duplicates.length > 0 && <p class="muted small preview-duplicates">Skipped, already here: {answer.duplicates.map(label).join(', ')}</p>}
      {answer.refused.length > 0 && (
        <ul class="small preview-refused">
          {answer.refused.map((item) => (
            <li key={item.index}>
              {item.service ? label(item) : `Item ${item.index}`}: {item.reason}
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

const EXPORT_CHOICES: [ExportAnswer['format'], string][] = [
  ['otpauth', 'otpauth:// links (a text file most apps import)'],
  ['aegis', 'Aegis vault (plain JSON)'],
  ['google-migration', 'Google Authenticator QR codes (shown here)'],
]

export function ExportTokens(props: { onClose(): void }) {
  const [format, setFormat] = useState<ExportAnswer['format']>('otpauth')
  const [password, setPassword] = useState('')
  const [codes, setCodes] = useState<ExportAnswer | null>(null)
  const { busy, error, setError, run } = useSubmission()
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    await run(async () => {
      const answer = await api<ExportAnswer>('POST', '/api/2fa/export', { format, password })
      setPassword('')
      if (answer.skipped.length > 0) toast(`Not exported: ${answer.skipped.map((s) => `${label(s)} (${s.reason})`).join('; ')}`, 'error')
      if (answer.format === 'google-migration') return setCodes(answer)
      downloadText(answer.content, answer.format === 'aegis' ? 'svc-2fa-aegis.json' : 'svc-2fa-otpauth.txt')
      toast(`Exported ${answer.count} token${answer.count === 1 ? '' : 's'}`)
      props.onClose()
    })
  }
  if (codes) return <MigrationCodes answer={codes} onClose={props.onClose} />
  return (
    <Modal title="Export 2FA tokens" onClose={props.onClose} dirty={password !== ''}>
      <form class="stack" onSubmit={submit} autoComplete="off">
        <p class="small">The export holds every secret in plain form. Keep it somewhere safe, and delete it once imported.</p>
        <fieldset class="stack">
          <legend class="field-label">Format</legend>
          {EXPORT_CHOICES.map(([value, text]) => (
            <label key={value} class="radio">
              <input type="radio" name="format" value={value} checked={format === value} onChange={() => setFormat(value)} /> {text}
            </label>
          ))}
        </fieldset>
        <Field label="Your password" hint="Entered again: an export gives away every token.">
          <input name="password" type="password" autoComplete="current-password" value={password} onInput={(event) => setPassword(inputValue(event))} />
        </Field>
        <DialogActions error={error} busy={busy} submit="Export" onCancel={props.onClose} />
      </form>
    </Modal>
  )
}

/** Google Authenticator's export QR codes, drawn here (uqr, loaded now) from the links the server made. */
function MigrationCodes(props: { answer: ExportAnswer; onClose(): void }) {
  const links = props.answer.content.split('\n').filter(Boolean)
  const [images, setImages] = useState<string[] | null>(null)
  useEffect(() => {
    let live = true
    void import('uqr').then(({ renderSVG }) => {
      if (live) setImages(links.map((link) => `data:image/svg+xml;charset=utf-8,${encodeURIComponent(renderSVG(link, { border: 2 }))}`))
    })
    return () => {
      live = false
    }
  }, [props.answer])
  const onClose = props.onClose
  return (
    <Modal title="Scan with Google Authenticator" onClose={onClose}>
      <div class="stack">
        <p class="small">
          In Google Authenticator: Transfer accounts → Import accounts, then scan{' '}
          {links.length === 1 ? 'this code' : `these ${links.length} codes, one after another`}. They hold your secrets: close this when done.
        </p>
        {links.length === 0 && <p class="muted">None of your tokens can be carried by Google Authenticator.</p>}
        <div class="migration-codes">
          {images?.map((image, i) => (
            <figure key={image} class="migration-code">
              <img src={image} alt={`Google Authenticator QR code ${i + 1} of ${links.length}`} width={280} height={280} />
              <figcaption class="small muted">
                {i + 1} of {links.length}
              </figcaption>
            </figure>
          ))}
        </div>
        <div class="actions">
          <button type="button" class="btn btn-primary" onClick={onClose}>
            Done
          </button>
        </div>
      </div>
    </Modal>
  )
}
