// The sign-in card: the vault's name over whichever step of signing in is under way.
import type { ComponentChildren } from 'preact'

export function LoginCard(props: { children: ComponentChildren }) {
  return (
    <div class="login">
      <div class="login-card">
        <h1 class="login-title">
          <span class="brand-mark" aria-hidden="true">
            ◆
          </span>{' '}
          svc-vault
        </h1>
        {props.children}
      </div>
    </div>
  )
}
