"""Word data for the pretraining label generator (train/pretrain_labels.py): common English words by part
of speech, and person names.

Plain data, written for this project. The lists may contain words PhoneSim also uses; the generator drops
those (and their plural/singular forms) when it builds its pools, so nothing here needs to be edited when
PhoneSim grows. Parts of speech only steer how labels are composed ("Quiet harbor" = adjective + noun,
"Polish the lamp" style phrases = verb + noun); a word listed twice keeps its first category.
"""
from __future__ import annotations


def _words(block: str) -> tuple[str, ...]:
    """Whitespace-separated words of a block, first occurrence kept, order kept (a stable pool order)."""
    return tuple(dict.fromkeys(block.split()))


ADJECTIVES = _words("""
able absent active actual afraid alert alive amber ancient angry annual anxious aware awful azure
bashful basic beautiful bitter blank bold bored brave breezy brief bright brilliant broad broken brown
bumpy busy calm careful casual certain cheap cheerful chief chilly classic clever cloudy clumsy coarse
cold comfortable common cool coral correct cosmic crazy creative crimson crisp crowded cruel crunchy
curious curly current cute daily damp dear deep delicate dense distant dizzy dusky dusty eager early
eastern elegant endless entire equal exact excellent exotic extra faint fair familiar famous fancy far
fast fierce final fine firm flat fluffy foggy fond foreign formal former fragile free frequent fresh
friendly frosty frozen funny fuzzy gentle giant glad global gloomy glossy graceful grand grateful gray
green grumpy guilty hairy handsome handy harsh hazy healthy heavy helpful hidden hollow holy honest
hopeful horrible hot huge humble humid hungry icy ideal idle immense inner innocent intense ivory jolly
juicy keen kind large lazy leafy legal little lively local lonely loose loud lovely loyal lucky lunar
mad magic major mellow merry messy mighty mild minor misty modern modest moist muddy narrow nasty
native natural navy neat nervous nice nimble noble noisy normal northern novel odd official old
ordinary original outer pale patient peaceful perfect pink plain pleasant plucky polite poor popular
precious pretty previous primary private proper proud public pure purple quaint quirky rapid rare raw
real rear red regular remote rich rigid ripe rosy rough round royal rude rural rustic rusty sacred sad
safe salty sandy scarlet scary secret secure senior serious severe shallow sharp shiny short shy sick
silent silly simple single sleepy slim slow smart smooth sneaky snowy soft solar solid sore sour
southern spare special splendid spooky square stable steady steep stellar sticky stiff stormy strange
strict striped strong sturdy subtle sudden sunny super sure sweet swift tall tame tangy teal tender
thick thin thirsty tidy tight tiny tired tough tropical typical ugly unique upper urban usual vast
velvet vintage vital vivid warm weak wealthy weary western wet white whole wide windy wise witty wooden
woolly worried yummy zany zesty absolute adorable agile ample artful balmy blissful bouncy brisk bubbly
candid charming chubby chunky cozy crafty dainty dapper daring dreamy dull earnest easygoing fearless
festive fiery flaky flashy fleet frantic frugal gaudy gifted giddy gleaming glowing gorgeous gritty
hasty hearty honeyed husky jagged jaunty jumbo kindly lanky lavish lean lofty loyalist lush majestic
mature meek mossy nifty nutty oily opal orchid peppy perky plump polished posh prickly prime prompt
radiant rapt roomy rowdy rugged runny rusted savory scenic shaggy sincere sleek slender smoky snappy
snug soggy sparkling speedy spicy spiky spotless springy stately steamy stony sugary sunlit supreme
tangled tart tasty tawny thorny thrifty timid toasty towering tranquil trusty twinkling upbeat valiant
verdant vibrant wavy whimsical wiry wobbly wondrous zealous
""")

NOUNS = _words("""
acorn actor adventure advice agent airport alley almond anchor angle animal ankle answer ant apron
arch arena arm armchair army arrow art ash atlas attic aunt author autumn avenue award axe baby
backpack badge bag baker balcony ball balloon bamboo band banner barn barrel basket bath battery bay
beach beak beam bean bear beard bed bee beetle bell belt bench berry bicycle bird biscuit blanket
blade blossom boat bolt bone bonnet boot bottle boulder bow bowl box boy bracelet branch brass brick
bride broom brother brush bubble bucket buckle bud buffalo bug bulb bundle bunny cabin cable cake
camel camera camp candle candy cannon canoe cap captain carpet carrot cart cave ceiling cellar chain
chair chalk champion chapter cheese cherry chest chicken chimney chin circle circus claw clay cliff
cloak cloud clover coach coast coat cobweb collar comb compass cookie copper coral cork corn corner
cottage couch cousin cow crab cradle crane crayon cream creek crew cricket crow crown crystal cub cup
cupboard curtain cushion daisy dancer deer desert desk diamond dinosaur dish dock dog doll dolphin
dome donkey door dove dragon drawer dress drill drum duck dune dust eagle ear earth elbow elephant
elk engine envelope eye fabric face factory fairy farm farmer feather fence fern ferry field fig
finger fish flag flame flock floor flute fog fork fountain fox frame frog frost fruit fur gate gem
ghost giraffe glass glove goat gold goose gorilla grape grass gravel guitar gull hall hammer hamster
hand harp hat hawk hay hedge helmet hen hill hive hook horn horse hose hotel house hut ice igloo ink
insect iron ivy jacket jam jar jaw jeans jelly jewel judge jug juice jungle kangaroo kettle kid kitchen
kitten knee knife knot koala ladder lady lake lamb lamp lawn leaf leather lemon leopard lever lid lily
lion lip lizard lobster lock locket log loom lotus magnet mango map maple mask mast mat meal melon mill
mint mirror mitten mole monkey moon moose moss moth motor mouse mouth mud mug mule nail napkin neck
needle nest net nose notebook nut oak oar oasis octopus oven owl ox pail paint palace palm pan panda
parrot path paw peach peanut pear pearl pebble pedal pen penguin pepper piano pig pigeon pillow pilot
pin pipe pirate pit plate plum pocket poet pole pond pony porch pot potato pottery powder prince
princess pumpkin puppet puppy purse puzzle quail quartz queen quill quilt rabbit raccoon raft rail
rain rainbow raven reef ribbon ridge rifle robe robin rock roof rope rose rug ruler saddle sail sailor
sand sandal satellite saucer scale scarf scissors sea seal seed shark shed sheep shelf shell shield
ship shirt shore shovel shrimp sink skate skirt skull sky sled sleeve slipper snail snake snow soap
sock sofa soldier spider spike spoon spring squid squirrel stable stage stair stamp star statue steam
stem stick stone stool storm stove straw stream string sugar suit sun swan sweater sword table tail
tank tent thimble thorn thread throne thumb tiger tile toad toe tooth torch tower toy tractor trail
tree triangle truck trumpet tub tulip tunnel turkey turtle twig umbrella uncle unicorn valley van vase
vest village vine violin volcano wagon wall walnut wand wardrobe wasp watch wave well whale wheat
wheel whistle wig wind wing wire wizard wolf worm wren yacht yard yarn zebra zipper
ability access accident account achievement act addition adult advantage age agreement aim air
alarm album alert amount analysis angel apartment appeal appetite applause arrival article aspect
assembly assistant atmosphere attempt attention audience average baggage balance bargain base basin
basis battle beauty beginning behavior belief benefit bid blend block blood blueprint board body bond
bonus border bottom boundary brain brand bread breakfast breath breeze budget bunch burden bureau
business button cabinet calendar campaign canal candidate capital carbon career cargo carnival cash
castle catalog cause celebration cell center century ceremony chance channel character charity chart
check chef chemistry childhood choice chorus cinema citizen civic claim class climate clinic clock
closet club clue coffee coin collection college colony color column comedy comfort command comment
committee community company competition concept concert condition conference contest context
contract control conversation copy costume cotton council counter country courage course court
crafts credit crime crisis crop crossing crowd culture curve custom customer cycle dairy damage
danger dawn deadline deal debate decade decision degree delivery demand dentist department deposit
depth design detail device dialogue diary diet dinner direction director discovery discussion
disease distance district document domain dozen draft drama dream duty economy edge edition
education effect effort election element emergency emotion empire employee energy engineer entrance
entry episode equipment error escape essay estate evening event evidence exam example exchange
exercise exhibit exit expert explorer factor failure faith fame family fashion fault favor feast
feature fee festival fiction figure film finance fitness flavor flight flower focus folk forecast
format fortune forum foundation fragment freedom friend friendship fuel function fund furniture
future galaxy gallery game garage gas gathering gear gender generation genius gesture gift glimpse
goal government grade grain grammar grant graph gravity grocery growth guard guest guide habit
harvest health hearing heaven height hero highway history hobby holiday honey honor horizon host
humor hunger idea identity image impact income index industry infant influence injury inn insight
instance instinct instrument interest interview invention investment island issue item journal
journey joy judgment justice keeper kingdom knowledge label labor landscape language laughter lawyer
layer leader league lecture legend leisure lesson letter level liberty license lifestyle limit line
link liquid literature loan lobby logic loss lottery luggage lunch luxury machine magazine manner
manual marathon margin market marriage material matter meadow measure meat medal media medicine
member memory menu mercy merit message metal method midnight mile mineral minister minute miracle
mission mixture model moment money month mood morning motion mountain movement muscle museum
mystery nation nature navy neighbor network news newspaper night noise novel number nurse object
ocean offer officer opinion option orbit orchestra order organ origin outcome outline output
package page pair panel parade parent parking partner party passage passenger passion pasta patch
patience pattern payment peace penalty pension people period permit person phase philosophy photo
phrase picnic picture piece pile pitch pizza place plan planet plant plastic platform player pleasure
plenty poem poetry point police policy politics pool population portion portrait position poster
practice prayer prediction premium presence president pressure pride priest principle print prison
prize problem process produce product profile profit program progress project promise proof property
proposal prospect protest pulse purpose quality quantity quarter question quiz quote race radio
range rank rate ratio reaction reader reality reason receipt recipe record recovery region relief
remedy rent repair report request research resource respect response rest result retreat reward
rhythm rice riddle ring risk ritual rival river road robot role room root route routine row rule
safety salad salary sale salt sample satisfaction sauce savings scene schedule scheme scholar
school science score screen script sculpture season seat secret section sector security selection
seminar sense sentence sequence series servant service session settlement shade shadow shape share
shelter shift shop shopping signal silence silk skill sketch sleep slice slope smile smoke snack
society soil solution song soul sound soup source space speaker speech speed spirit sport spot
square staff standard station status step stock story strategy street strength stress structure
student studio style subject success suggestion summit supply support surface surgery surprise
survey symbol sympathy system talent target task taste tax tea teacher team technology temple tennis
term territory test text texture theater theme theory thought thunder ticket timber title toast
tone topic tour tournament tourist town trade tradition traffic tragedy training transport treasure
treaty trend trial tribe trick trip triumph trophy trust truth tune type union unit universe
university vacation value variety vehicle venture version vessel victory video view virtue vision
visit visitor voice volume voyage wage walk warmth warning wealth weapon weather wedding week
weight welcome wildlife window winner winter wisdom witness wonder wood word work workshop world
worth writer year youth zone
""")

VERBS = _words("""
accept admire adopt adjust arrange attach bake balance borrow brew brush bury calculate capture carry
carve celebrate chase chop climb coach collect color compare compose connect cook correct cover
crack cross crush cure dance deliver describe dig discover dive draw dream dress drink dust earn
embrace empty erase examine exchange explain explore fasten fetch fill finish float fold follow frame
gather glue grab greet grill grind grow guard guess guide hammer handle harvest heal heat help hike
hire hug hunt imagine improve inspect invent invite iron join juggle jump kick knead knit knock label
land laugh launch lead lift light listen load locate lock measure melt memorize mend milk mop mount
mow name nail notice observe offer oil order organize pack paddle paint patch peel perform pet pin
plant polish pour practice praise prepare present protect prune pull pump punch push rake reach
rebuild recycle refill rehearse relax remember repair repeat replace rescue ride rinse roast roll rub
sail scan scrub sculpt seal search sell serve sew shake share sharpen shave shine shop shovel sift
sign sing sketch ski slice smell smile sow spin splash spray spread sprinkle squeeze stack stamp
steam stir stitch store stretch study sweep swim swing taste teach tease thank thread tidy tie toast
toss trace track train travel trim tune twist untie vacuum visit wake walk wander warm wash watch
water wave wax weave weed weigh welcome whisk whistle wipe wish wonder wrap wrestle yawn zip
""")

FIRST_NAMES = _words("""
Aaron Abigail Adrian Agnes Aidan Alan Albert Alex Alfred Alma Amanda Amelia Andre Andrew Angela Anna
Anthony Arthur Ava Beatrice Ben Benjamin Bernard Beth Blake Boris Brenda Brian Caleb Camila Carmen
Caroline Cecilia Charles Charlotte Chloe Claire Clara Colin Connor Daisy Damian Daniel Daphne Darius
Dean Derek Diana Dominic Dorothy Douglas Edgar Edith Edward Elena Eli Elias Eliza Ella Ellen Elliot
Emil Eric Erin Esther Ethan Eva Evan Fatima Fiona Frances Freya Gabriel Gavin George Georgia Gerald
Gloria Gordon Hamid Harold Harriet Harvey Helen Henry Holly Howard Ian Ingrid Irene Isaac Isabel
Jack Jacob James Jane Jasmine Jason Jenna Jerome Jessica Joan Joel John Joseph Judith Julian Julius
Karen Karl Kate Keith Kira Kyle Lars Leah Leo Leon Lewis Lily Linda Lionel Lorenzo Louis Lucas Lucia
Lucy Luis Luke Lydia Maggie Malcolm Marco Maria Martin Mary Mason Maya Megan Melissa Michael Miguel
Mila Miles Milo Mina Miriam Molly Monica Nadia Naomi Nathan Neil Nora Oliver Omar Owen Paul Paula
Peter Philip Phoebe Rachel Rafael Ralph Ravi Rebecca Rita Robert Roger Ruth Ryan Sandra Sara Sean
Sebastian Selma Simon Sofia Sonia Stella Stephen Susan Sylvia Talia Teresa Theo Thomas Tobias Ursula
Valerie Victor Vivian Walter Wendy William Yara Yasmin Yuri Zara Anika Bianca Cyrus Dmitri Esme
Farah Gideon Hana Ibrahim Jorge Kofi Layla Mateus Nia Orla Priya Rohan Saoirse Tomas Uma Vikram
Wanda Xavier Yosef Zainab Arjun Birgit Cosmo Delia Enzo Flora Gemma Hector Imogen Jasper
""")

LAST_NAMES = _words("""
Abbott Allen Alvarez Andersen Armstrong Baker Banks Barnes Bauer Becker Bell Bennett Bose Bowen Boyd
Bradley Brooks Burke Butler Byrne Campbell Carter Castro Chavez Clark Cole Collins Cooper Cruz Curtis
Dalton Das Dixon Doyle Duncan Dunn Edwards Ellis Erikson Farrell Fernandez Fleming Flores Ford Foster
Fraser Fuller Gallo Gibson Gomez Gonzalez Graham Grant Griffin Gupta Hall Hamilton Harper Harris
Hayes Henderson Hoffman Holmes Hughes Hunt Iyer Jackson Jones Kaur Keller Kelly Kennedy Klein Koch
Kowalski Kramer Larsen Lambert Lang Lawson Lindqvist Lowe Mahler Marsh Meyer Mills Mitchell Molina
Morales Morgan Murphy Murray Nash Nelson Newman Nielsen Nolan Norris Olsen Ortiz Owens Parker Payne
Perez Perry Phillips Pierce Porter Powell Ramirez Ramos Reed Reid Reyes Richter Rivera Roberts
Robinson Rogers Romero Ross Russell Sanchez Sato Schmidt Schneider Shah Shaw Simmons Sinclair Stewart
Sullivan Suzuki Thompson Torres Turner Vogel Wagner Walsh Ward Watson Webb Wells Whitaker Yamamoto
Zimmer Achebe Bakshi Carvalho Dimitrov Eriksen Fontaine Gallagher Haddad Ibarra Jovanovic Kaminski
Lindgren Mendoza Nakamura Oyelaran Pereira Quintero Rahman Sorensen Takahashi Urquhart Valdez
Wojcik Xu Yilmaz Zapata Adeyemi Brennan Chowdhury Delgado Esposito Fitzgerald Grimaldi Horvat
""")
