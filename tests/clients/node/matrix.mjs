// One scenario of the client matrix with a Node client; prints one JSON line with what the client saw.
// Run as: node --input-type=module < matrix.mjs, from the folder holding node_modules, with
// ACCORD_BASE (the /v1 URL), CLIENT (openai | vercel), SCENARIO and STREAMED (1 or 0) set.
import OpenAI from "openai";
import { generateText, streamText, tool, stepCountIs, Output } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { z } from "zod";

const base = process.env.ACCORD_BASE;
const streamed = process.env.STREAMED === "1";
const scenario = process.env.SCENARIO;
const WEATHER = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
  additionalProperties: false,
};
const CITY = {
  type: "object",
  properties: { city: { type: "string" }, temperature: { type: "integer" } },
  required: ["city", "temperature"],
  additionalProperties: false,
};

// openai-node: responses.create, or the responses.stream() helper when streamed.
const client = new OpenAI({ baseURL: base, apiKey: "unused", maxRetries: 0, timeout: 20000 });

async function respond(body) {
  if (!streamed) return { response: await client.responses.create({ model: "scripted", ...body }), kinds: [] };
  const kinds = [];
  const stream = client.responses.stream({ model: "scripted", ...body });
  for await (const event of stream) kinds.push(event.type);
  return { response: await stream.finalResponse(), kinds };
}

const openaiScenarios = {
  async plain() {
    const { response } = await respond({ input: "hi" });
    return { text: response.output_text };
  },
  async tool_loop() {
    const tools = [{ type: "function", name: "get_weather", parameters: WEATHER, strict: true }];
    const first = (await respond({ input: "What is the weather in Paris?", tools })).response;
    const call = first.output.find((item) => item.type === "function_call");
    const second = (
      await respond({
        previous_response_id: first.id,
        tools,
        input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }],
      })
    ).response;
    return { call: { name: call.name, arguments: JSON.parse(call.arguments) }, text: second.output_text };
  },
  async keepalive() {
    const { response, kinds } = await respond({ input: "keepalive please" });
    const firstDelta = kinds.indexOf("response.output_text.delta");
    return { text: response.output_text, keepalive_after_delta: kinds.slice(firstDelta).includes("response.in_progress") };
  },
  async structured() {
    const { response } = await respond({
      input: "structured weather report",
      text: { format: { type: "json_schema", name: "city", schema: CITY, strict: true } },
    });
    return { object: JSON.parse(response.output_text) };
  },
  async continuation() {
    const alone = (await respond({ input: "and now?" })).response;
    const first = (await respond({ input: "hi, remember the word tangerine" })).response;
    const second = (await respond({ input: "and now?", previous_response_id: first.id })).response;
    return {
      text: second.output_text,
      previous: second.previous_response_id === first.id,
      more_input: second.usage.input_tokens > alone.usage.input_tokens,
    };
  },
  async reasoning() {
    const { response, kinds } = await respond({ input: "think about 2+2", reasoning: { summary: "auto" } });
    const reasoning = response.output.find((item) => item.type === "reasoning");
    return {
      text: response.output_text,
      reasoning: reasoning.summary.map((part) => part.text).join(""),
      summary_deltas: kinds.includes("response.reasoning_summary_text.delta") || !streamed,
    };
  },
};

// The Vercel AI SDK 6 with @ai-sdk/openai on the Responses API: generateText, or streamText when streamed.
const provider = createOpenAI({ baseURL: base, apiKey: "unused" });
const model = provider.responses("scripted");

async function vercel(options) {
  if (!streamed) return await generateText({ model, maxRetries: 0, ...options });
  const result = streamText({ model, maxRetries: 0, ...options, onError: ({ error }) => { throw error; } });
  let streamedText = "";
  for await (const part of result.textStream) streamedText += part;
  return {
    text: await result.text,
    streamedText,
    reasoningText: await result.reasoningText,
    response: await result.response,
    usage: await result.usage,
    providerMetadata: await result.providerMetadata,
    output: options.output ? await result.output : undefined,
    steps: await result.steps,
  };
}

const vercelScenarios = {
  async plain() {
    return { text: (await vercel({ prompt: "hi" })).text };
  },
  async tool_loop() {
    const calls = [];
    const result = await vercel({
      prompt: "What is the weather in Paris?",
      tools: {
        get_weather: tool({
          description: "The weather in a city.",
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            calls.push(city);
            return "sunny";
          },
        }),
      },
      stopWhen: stepCountIs(3),
    });
    return { calls, text: result.text };
  },
  async keepalive() {
    return { text: (await vercel({ prompt: "keepalive please" })).text };
  },
  async structured() {
    const result = await vercel({
      prompt: "structured weather report",
      output: Output.object({ schema: z.object({ city: z.string(), temperature: z.number().int() }) }),
    });
    return { object: result.output };
  },
  async continuation() {
    const alone = await vercel({ prompt: "and now?" });
    const first = await vercel({ prompt: "hi, remember the word tangerine" });
    const second = await vercel({
      prompt: "and now?",
      providerOptions: { openai: { previousResponseId: first.providerMetadata.openai.responseId } },
    });
    return { text: second.text, more_input: second.usage.inputTokens > alone.usage.inputTokens };
  },
  async reasoning() {
    const result = await vercel({
      prompt: "think about 2+2",
      // The provider sends reasoning options only to models it knows reason, unless told.
      providerOptions: { openai: { reasoningSummary: "auto", forceReasoning: true } },
    });
    return { text: result.text, reasoning: result.reasoningText };
  },
};

const scenarios = process.env.CLIENT === "vercel" ? vercelScenarios : openaiScenarios;
try {
  console.log(JSON.stringify({ ok: true, ...(await scenarios[scenario]()) }));
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String(error && error.stack ? error.stack : error) }));
}
