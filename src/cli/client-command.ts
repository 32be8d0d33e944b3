/**
 * The base of commands that talk to brokers: where they connect (flags, environment,
 * profile) and the admin helpers (src/cli/admin/connect.ts) bound to the command.
 */
import type {Command} from '@oclif/core'
import type {AdminClient} from '../client/admin.js'
import type {GroupOffsetsAdmin} from '../client/group-admin.js'
import {MetaError} from '../protocol/errors.js'
import {withEachBroker, withGroupAdmin, type AdminContext} from './admin/connect.js'
import {BaseCommand} from './base-command.js'
import type {ConnectionFlagValues} from './client-flags.js'
import {resolveTarget, type ResolvedTarget} from './connection.js'
import {clientPassword} from './password-prompt.js'
import {usageErrors} from './usage.js'

export abstract class ClientCommand<T extends typeof Command> extends BaseCommand<T> {
  private resolved: Promise<ResolvedTarget> | undefined

  /** --tls, --ca, --cert, --key: the process-wide client TLS default (src/client/tls.ts). */
  override async init(): Promise<void> {
    await super.init()
    const {tls, ca, cert, key} = this.connectionFlags()
    if (tls !== true && ca === undefined && cert === undefined && key === undefined) return
    const {loadClientTlsFiles, setDefaultClientTls} = await import('../client/tls.js')
    const options = usageErrors(() => loadClientTlsFiles({ca, cert, key}))
    setDefaultClientTls(tls === true, options)
  }

  /** Where this command connects; a bad combination (-b with --zk, an unknown profile) is a usage error. */
  protected target(): Promise<ResolvedTarget> {
    this.resolved ??= resolveTarget(this.connectionFlags(), this.given, this.config.configDir)
      .then(async (target) => {
        await this.profileTls(target)
        // Every connection this command makes logs in as --user ($META_USER), else the profile's user.
        const given = this.connectionFlags().user
        const fromProfile = given === undefined || given === ''
        const user = fromProfile ? target.user : given
        if (user !== undefined) {
          const file = this.connectionFlags()['password-file'] ?? (fromProfile ? target.passwordFile : undefined)
          const password = await clientPassword(user, file)
          const {setDefaultCredentials} = await import('../client/index.js')
          setDefaultCredentials({user, password})
        }
        return target
      })
      .catch((error: unknown) =>
        usageErrors(() => {
          throw error
        }),
      )
    return this.resolved
  }

  /** The profile's TLS settings, each where no flag ($META_TLS, $META_CA…) gave one. */
  private async profileTls(target: ResolvedTarget): Promise<void> {
    if (target.tls === undefined) return
    const flags = this.connectionFlags()
    const tls = flags.tls === true || target.tls.tls === true
    const files = flags.cert === undefined ? {cert: target.tls.cert, key: target.tls.key} : {cert: flags.cert, key: flags.key}
    const {loadClientTlsFiles, setDefaultClientTls} = await import('../client/tls.js')
    setDefaultClientTls(tls, loadClientTlsFiles({ca: flags.ca ?? target.tls.ca, ...files}))
  }

  /** The group: -g, else the profile's default group; a usage error naming both when neither. */
  protected async groupOf(flag: string | undefined): Promise<string> {
    if (flag !== undefined) return flag
    const target = await this.target()
    if (target.group !== undefined) return target.group
    return usageErrors(() => {
      throw MetaError.invalidArgument(`missing -g/--group: name a consumer group, or set one in a profile (meta profile create NAME --group G)`)
    })
  }

  protected withGroupAdmin<R>(work: (admin: GroupOffsetsAdmin, target: ResolvedTarget) => Promise<R>): Promise<R> {
    return withGroupAdmin(this.adminContext(), work)
  }

  protected withEachBroker<R>(work: (admin: AdminClient, brokerId: number | undefined, target: ResolvedTarget) => Promise<R>): Promise<R[]> {
    return withEachBroker(this.adminContext(), work)
  }

  protected adminContext(): AdminContext {
    const flags = this.flags as {timeout?: number; quiet?: boolean}
    return {target: () => this.target(), timeoutMs: flags.timeout, logger: this.logger, quiet: this.jsonEnabled() || flags.quiet === true}
  }

  private connectionFlags(): ConnectionFlagValues {
    return this.flags as ConnectionFlagValues
  }
}
