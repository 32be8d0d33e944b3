import {Args} from '@oclif/core'
import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags} from '../../cli/client-flags.js'
import {usageErrors} from '../../cli/usage.js'
import {MetaError} from '../../protocol/errors.js'
import {brokerIdFlag, checkTarget, settingsOf, topicSettingFlags, type TopicAnswer} from '../../cli/admin/topic-admin.js'

export default class TopicAlter extends ClientCommand<typeof TopicAlter> {
  static override summary = "Change a topic's partition count (it only grows) or its [topic=…] settings on a running broker."

  static override description = `Works on any topic the broker has (a section in server.ini, created online, or data). The change goes into the broker's topic overlay (<dataPath>/__meta_state/topic-overlay.json), which is kept across restarts and stays on top of server.ini: at a reload a key set online wins over the same key in the file. Each --set key=value is any key of a [topic=…] section, checked as server.ini checks it. --partitions only grows the topic (to shrink one: close, drain and delete partitions, see meta partitions); new partitions are served at once and groups rebalance.

In a cluster give --zk with --broker-id: a topic is changed on one broker.`

  static override examples = [
    {description: 'Grow to eight partitions', command: '<%= config.bin %> <%= command.id %> orders --partitions 8'},
    {description: 'Stop accepting puts', command: '<%= config.bin %> <%= command.id %> orders --set acceptPublish=false'},
  ]

  static override enableJsonFlag = true

  static override args = {
    topic: Args.string({description: 'Topic name.', required: true}),
  }

  static override flags = {
    ...adminFlags,
    ...topicSettingFlags,
    'broker-id': brokerIdFlag,
  }

  async run(): Promise<TopicAnswer[] | undefined> {
    const {topic} = this.args
    const settings = usageErrors(() => {
      checkTarget(topic, this.flags)
      const given = settingsOf(this.flags)
      if (Object.keys(given).length === 0) throw MetaError.invalidArgument(`nothing to change for topic "${topic}": expected --partitions N or at least one --set key=value`)
      return given
    })
    const {topicAdmin, renderTopicChange} = await import('../../cli/admin/topic-admin.js')
    const answers = await topicAdmin(this.adminContext(), this.flags['broker-id'], 'alter', topic, {settings})
    if (this.jsonEnabled()) return answers
    process.stdout.write(renderTopicChange(answers))
    return undefined
  }
}
