// The model catalogue from C++: agent::find_model by "provider/id", agent::list_models, the
// error of an unknown name, and a catalogue model as an agent's model.
#include <string>

#include "common.hpp"

TEST(Models, FindModelGivesTheCatalogueFacts) {
    std::string model = agent::find_model("anthropic/claude-sonnet-4-5");
    EXPECT_EQ(model.rfind(R"({"id":"claude-sonnet-4-5","name":)", 0), 0u) << model;
    EXPECT_NE(model.find(R"("api":"anthropic-messages")"), std::string::npos) << model;
    EXPECT_NE(model.find(R"("cost":{"input":3,"output":15,"cacheRead":0.3,"cacheWrite":3.75})"), std::string::npos)
        << model;
    EXPECT_NE(model.find(R"("contextWindow":200000,"maxTokens":64000)"), std::string::npos) << model;
    std::string routed = agent::find_model("openrouter/anthropic/claude-sonnet-4.5");
    EXPECT_NE(routed.find(R"("id":"anthropic/claude-sonnet-4.5")"), std::string::npos) << routed;
}

TEST(Models, AnUnknownModelThrowsNamingIt) {
    try {
        (void)agent::find_model("anthropic/claude-nonexistent");
        ADD_FAILURE() << "no agent::Error was thrown";
    } catch (const agent::Error& e) {
        std::string message = e.what();
        EXPECT_EQ(e.status(), AGENT_ERR_INVALID_ARGUMENT);
        EXPECT_NE(message.find("Unknown model 'anthropic/claude-nonexistent'"), std::string::npos) << message;
        EXPECT_NE(message.find("; agent::list_models() lists the models."), std::string::npos) << message;
        EXPECT_EQ(message.find("agent_model_list"), std::string::npos) << message;
    }
}

TEST(Models, ListModels) {
    std::string anthropic = agent::list_models("anthropic");
    EXPECT_EQ(anthropic.front(), '[');
    EXPECT_NE(anthropic.find(R"({"id":"claude-sonnet-4-5",)"), std::string::npos);
    EXPECT_EQ(anthropic.find(R"("provider":"openai")"), std::string::npos);
    std::string everything = agent::list_models();
    EXPECT_GT(everything.size(), anthropic.size());
    EXPECT_THROW((void)agent::list_models("nobody"), agent::Error);
}

TEST(Models, ACatalogueModelIsAnAgentsModel) {
    std::string model = agent::find_model("google/gemini-2.5-flash");
    agent::Options options(R"({"initialState":{"model":)" + model + "}}");
    options.use_providers();
    agent::Agent bot(std::move(options));
    EXPECT_NE(bot.state().find(model), std::string::npos);
}
